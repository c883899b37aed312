/**
 * The response with its body read through `check`, which sees each chunk as it arrives (after decompression, as
 * fetch inflates while the body is read) and returns the error that ends the body there, or null to pass it on. The
 * headers lose content-encoding and content-length, which no longer describe the body handed on.
 */
export function checkedResponse(response: Response, check: (chunk: Uint8Array) => Error | null): Response {
  if (!response.body) return response
  const reader = response.body.getReader()
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read()
      if (done) return controller.close()
      const refused = check(value)
      if (!refused) return controller.enqueue(value)
      await reader.cancel(refused)
      controller.error(refused)
    },
    cancel: (reason) => reader.cancel(reason)
  })
  const headers = new Headers(response.headers)
  headers.delete('content-encoding')
  headers.delete('content-length')
  const checked = new Response(body, { status: response.status, statusText: response.statusText, headers })
  Object.defineProperty(checked, 'url', { value: response.url })
  return checked
}
