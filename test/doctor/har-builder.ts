/** Builds HAR 1.2 files by hand for the doctor's rule tests: one entry per exchange, times in milliseconds. */
export interface EntrySpec {
  at: number
  params: Record<string, string>
  status: number
  headers?: Record<string, string>
  body?: unknown
  /** Raw body text (SSE), instead of `body` as JSON. */
  text?: string
  wait?: number
  receive?: number
  fromCache?: 'memory' | 'disk'
  requestHeaders?: Record<string, string>
  url?: string
}

const T0 = Date.parse('2026-11-24T10:00:00.000Z')
const pairs = (record: Record<string, string>) => Object.entries(record).map(([name, value]) => ({ name, value }))

export function entry(spec: EntrySpec) {
  const url = new URL(spec.url ?? 'https://app.example.com/v1/shape')
  for (const [name, value] of Object.entries({ table: 'issues', ...spec.params })) url.searchParams.set(name, value)
  const wait = spec.wait ?? 20
  const receive = spec.receive ?? 2
  return {
    startedDateTime: new Date(T0 + spec.at).toISOString(),
    time: wait + receive,
    request: {
      method: 'GET',
      url: url.toString(),
      httpVersion: 'HTTP/1.1',
      headers: pairs(spec.requestHeaders ?? {}),
      queryString: [],
      cookies: [],
      headersSize: -1,
      bodySize: 0
    },
    response: {
      status: spec.status,
      statusText: '',
      httpVersion: 'HTTP/1.1',
      headers: pairs({
        'content-type': spec.text === undefined ? 'application/json' : 'text/event-stream',
        ...spec.headers
      }),
      cookies: [],
      content: { size: 0, mimeType: 'application/json', text: spec.text ?? JSON.stringify(spec.body ?? []) },
      redirectURL: '',
      headersSize: -1,
      bodySize: -1
    },
    cache: {},
    timings: { blocked: -1, dns: -1, connect: -1, ssl: -1, send: 0, wait, receive },
    ...(spec.fromCache ? { _fromCache: spec.fromCache } : {})
  }
}

export const har = (...entries: EntrySpec[]) =>
  JSON.stringify({
    log: { version: '1.2', creator: { name: 'test', version: '1' }, pages: [], entries: entries.map(entry) }
  })

export const upToDate = { headers: { control: 'up-to-date' } }
export const mustRefetch = [{ headers: { control: 'must-refetch' } }]
export const insert = (id: number) => ({
  key: `"public"."issues"/"${id}"`,
  value: { id: String(id) },
  headers: { operation: 'insert' }
})
export const update = (id: number) => ({
  key: `"public"."issues"/"${id}"`,
  value: { id: String(id) },
  headers: { operation: 'update' }
})

/** The protocol headers of an answer. */
export const shapeHeaders = (handle: string, offset: string, more: Record<string, string> = {}) => ({
  'electric-handle': handle,
  'electric-offset': offset,
  'electric-schema': '{}',
  ...more
})
