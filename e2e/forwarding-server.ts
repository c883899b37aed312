import { createServer, request, type Server } from 'node:http'

/**
 * Another shape service, as the workbench sees one: a server on its own port passing requests for paths under
 * `prefix` + `only` to `target` (the app), the prefix taken off; anything else is a 404 that any page may read.
 */
export async function forwardingServer(
  target: string,
  { prefix = '', only = '/', host = '127.0.0.1' }: { prefix?: string; only?: string; host?: string } = {}
): Promise<{ url: string; server: Server; close(): void }> {
  const upstream = new URL(target)
  const server = createServer((req, res) => {
    if (!req.url?.startsWith(`${prefix}${only}`)) {
      res.writeHead(404, { 'content-type': 'application/json', 'access-control-allow-origin': '*' })
      res.end(JSON.stringify({ message: 'Not found' }))
      return
    }
    const forwarded = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: req.url.slice(prefix.length),
        method: req.method,
        headers: { ...req.headers, host: upstream.host }
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      }
    )
    forwarded.on('error', () => res.destroy())
    req.pipe(forwarded)
  })
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening))
  return {
    url: `http://${host}:${(server.address() as { port: number }).port}${prefix}`,
    server,
    close() {
      server.closeAllConnections()
      server.close()
    }
  }
}
