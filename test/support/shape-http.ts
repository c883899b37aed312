/** Raw HTTP helpers for the shape API: what a protocol test needs and nothing more. */

export type Message = {
  headers: Record<string, unknown>
  key?: string
  value?: Record<string, string | null>
  old_value?: Record<string, string | null>
}

export interface ShapeResponse {
  status: number
  headers: Headers
  text: string
  /** The parsed JSON body (null when empty or not JSON). */
  body: unknown
  header(name: string): string | null
}

export function shapeUrl(base: string, params: Record<string, string>, path = '/v1/shape'): string {
  const url = new URL(path, base)
  for (const [key, value] of Object.entries(params)) url.searchParams.append(key, value)
  return url.toString()
}

export async function get(
  base: string,
  params: Record<string, string>,
  init: RequestInit = {},
  brand = 'service'
): Promise<ShapeResponse> {
  const response = await fetch(shapeUrl(base, params), init)
  const text = await response.text()
  let body: unknown
  try {
    body = text === '' ? null : JSON.parse(text)
  } catch {
    body = null
  }
  return {
    status: response.status,
    headers: response.headers,
    text,
    body,
    header: (name) => response.headers.get(name.replace(/^@/, `${brand}-`))
  }
}

export const messages = (response: ShapeResponse): Message[] => response.body as Message[]
export const changes = (response: ShapeResponse): Message[] =>
  messages(response).filter((message) => 'operation' in message.headers)
export const controls = (response: ShapeResponse): string[] =>
  messages(response).flatMap((message) =>
    typeof message.headers.control === 'string' ? [message.headers.control] : []
  )

/** Follows a shape from `-1` until up-to-date; returns the handle, the last offset and every message seen. */
export async function syncToEnd(
  base: string,
  shape: Record<string, string>,
  brand = 'service'
): Promise<{ handle: string; offset: string; messages: Message[]; requests: number }> {
  let response = await get(base, { ...shape, offset: '-1' }, {}, brand)
  const handle = response.header('@handle') ?? ''
  const seen: Message[] = []
  let requests = 1
  for (;;) {
    if (response.status !== 200) throw new Error(`unexpected ${response.status}: ${response.text}`)
    seen.push(...messages(response))
    const offset = response.header('@offset') ?? ''
    if (controls(response).includes('up-to-date')) return { handle, offset, messages: seen, requests }
    response = await get(base, { ...shape, offset, handle }, {}, brand)
    requests += 1
  }
}

/** Materialises change messages by key, as a client would. */
export function materialise(
  rows: Map<string, Record<string, string | null>>,
  list: readonly Message[]
): Map<string, Record<string, string | null>> {
  for (const message of list) {
    const operation = message.headers.operation
    if (!message.key) continue
    if (operation === 'insert') rows.set(message.key, { ...message.value })
    else if (operation === 'update') rows.set(message.key, { ...rows.get(message.key), ...message.value })
    else if (operation === 'delete') rows.delete(message.key)
  }
  return rows
}

/** Like materialise, and notes every change that does not fit the rows (an insert of a present key, a change of an absent one). */
export function materialiseStrictly(
  rows: Map<string, Record<string, string | null>>,
  list: readonly Message[],
  anomalies: string[]
): void {
  for (const message of list) {
    const key = message.key
    if (!key) continue
    const operation = message.headers.operation
    if (operation === 'insert' && rows.has(key)) anomalies.push(`insert of a present ${key}`)
    if (operation !== 'insert' && !rows.has(key)) anomalies.push(`${String(operation)} of an absent ${key}`)
    if (operation === 'delete') rows.delete(key)
    else rows.set(key, { ...rows.get(key), ...message.value })
  }
}
