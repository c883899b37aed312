import { isCredentialHeader, isCredentialParam } from '../../shared/shape-client/credentials'
import { readRecording } from './input'
import { isShapeRequest } from './timeline'

const MASK = '•••'
/** JSON fields and form fields that hold secrets, in request and response bodies. */
const SECRET_FIELD =
  /token|secret|password|passwd|api[-_]?key|authorization|cookie|credential|session|code_verifier|client_assertion/i
/** OAuth's authorization response: a `code` (exchanged for tokens) and its `state`, in query, fragment and forms. */
const OAUTH_FIELD = /^(code|state)$/i
/** Shorter values of OAuth fields are masked where they stand but not sought elsewhere (`state=open` is no secret). */
const MIN_OAUTH_SOUGHT = 8
/** JSON Web Tokens anywhere in the text. */
const JWT = /eyJ[\w-]{4,}\.[\w-]{4,}\.[\w-]*/g
/** A secret parameter in any URL anywhere in the file (a page title, an initiator, a header no rule names). */
const URL_SECRET_PARAM =
  /([?&#;](?:code|state|[\w.-]*(?:token|secret|password|passwd|api[-_]?key|credential|session|code_verifier)[\w.-]*)=)[^&#\s"\\]+/gi

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/** Masks secrets in a JSON value in place, collecting each secret value found. */
function maskFields(value: Json, found: Set<string>): Json {
  if (Array.isArray(value)) return value.map((item) => maskFields(item, found))
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => {
      if (SECRET_FIELD.test(key) && typeof item === 'string') {
        found.add(item)
        return [key, MASK]
      }
      return [key, maskFields(item, found)]
    })
  )
}

const isSecretParam = (name: string): boolean =>
  isCredentialParam(name) || SECRET_FIELD.test(name) || OAUTH_FIELD.test(name)

/** Masks the secret parameters of a query or form, collecting their values; returns whether any was masked. */
function maskParams(params: URLSearchParams, found: Set<string>): boolean {
  let changed = false
  for (const [name, value] of [...params]) {
    if (!isSecretParam(name) || !value || value === MASK) continue
    if (!OAUTH_FIELD.test(name) || value.length >= MIN_OAUTH_SOUGHT) found.add(value)
    params.set(name, MASK)
    changed = true
  }
  return changed
}

/** A URL with its secret query and fragment parameters (`#access_token=…&state=…`) and its password masked. */
function maskUrl(url: string, found: Set<string>): string {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return url
  }
  const query = new URLSearchParams(parsed.search)
  if (maskParams(query, found)) parsed.search = query.toString()
  const fragment = new URLSearchParams(parsed.hash.slice(1))
  if (parsed.hash.includes('=') && maskParams(fragment, found)) parsed.hash = fragment.toString()
  if (parsed.password) {
    found.add(parsed.password)
    parsed.password = MASK
  }
  return parsed.toString()
}

/** A JSON body with its secret fields masked, or a form with its secret fields (OAuth's code and state too). */
function maskBodyText(text: string, found: Set<string>): string {
  try {
    return JSON.stringify(maskFields(JSON.parse(text) as Json, found))
  } catch {
    const form = new URLSearchParams(text)
    return maskParams(form, found) ? form.toString() : text
  }
}

const SSE_DATA = /^data(:|$)/

/** One event-stream block (a frame as the tap records it): its `data:` lines are masked as one body. */
function maskSseBlock(block: string, found: Set<string>): string {
  const lines = block.split('\n')
  const data = lines.filter((line) => SSE_DATA.test(line)).map((line) => line.slice(5).replace(/^ /, ''))
  if (data.length === 0) return block
  const text = data.join('\n')
  const masked = maskBodyText(text, found)
  if (masked === text) return block
  return [...lines.filter((line) => !SSE_DATA.test(line)), `data: ${masked}`].join('\n')
}

/** A text/event-stream body: each event's data masked as a body of its own (a JSON message of the shape stream). */
function maskSse(text: string, found: Set<string>): string {
  return text
    .replace(/\r\n?/g, '\n')
    .split('\n\n')
    .map((block) => maskSseBlock(block, found))
    .join('\n\n')
}

/** A shape request's body, JSON or an event stream, with its secrets masked. */
const maskShapeBody = (text: string, sse: boolean, found: Set<string>): string =>
  sse ? maskSse(text, found) : maskBodyText(text, found)

/** Declared as an event stream, or reading as one (a HAR's mimeType is not always the response's). */
const isEventStream = (contentType: string | null | undefined, text: string): boolean =>
  /event-stream/i.test(contentType ?? '') || /^(data|event|id|retry)?:/.test(text.trimStart())

interface NameValue {
  name: string
  value: string
}

function maskPairs(pairs: unknown, found: Set<string>, all = false): void {
  if (!Array.isArray(pairs)) return
  for (const pair of pairs as NameValue[]) {
    if (typeof pair?.value !== 'string') continue
    if (all || isCredentialHeader(pair.name) || isCredentialParam(pair.name) || SECRET_FIELD.test(pair.name)) {
      // A cookie or set-cookie header: each cookie value is a secret on its own.
      for (const part of pair.value.split(/;\s*|,\s*(?=[^;=]+=)/)) {
        const value = part.includes('=') ? part.slice(part.indexOf('=') + 1) : part
        if (value.trim()) found.add(value.trim())
      }
      found.add(pair.value)
      pair.value = MASK
    }
  }
}

function maskHeaderTuples(headers: unknown, found: Set<string>): void {
  if (!Array.isArray(headers)) return
  for (const header of headers as Array<[string, string]>) {
    if (isCredentialHeader(header[0])) {
      found.add(header[1])
      for (const part of header[1].split(/;\s*/)) if (part.includes('=')) found.add(part.slice(part.indexOf('=') + 1))
      header[1] = MASK
    }
  }
}

/** Replaces every secret value found anywhere in the text (a token echoed in a body, a Referer, a redirect). */
function scrub(text: string, found: Set<string>): string {
  let result = text
  const secrets = [...found]
    .flatMap((secret) => [secret, secret.replace(/^Bearer\s+/i, '')])
    .filter((secret) => secret.length >= 4 && secret !== MASK)
  for (const secret of [...new Set(secrets)].sort((a, b) => b.length - a.length)) {
    for (const form of new Set([secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)]))
      result = result.split(form).join(MASK)
  }
  return result.replace(JWT, MASK).replace(URL_SECRET_PARAM, `$1${MASK}`)
}

/** The parts of a HAR entry the redaction rewrites (readRecording has checked the file's shape). */
interface HarEntryDoc {
  request: {
    url: string
    headers?: unknown
    queryString?: unknown
    cookies?: unknown
    postData?: { params?: unknown; text?: unknown }
  }
  response: {
    headers?: unknown
    cookies?: unknown
    redirectURL?: unknown
    content?: { text?: unknown; encoding?: unknown; mimeType?: unknown }
  }
  _frames?: Array<{ raw: string }>
  _webSocketMessages?: unknown
}

interface RecordingExchangeDoc {
  request: { url: string; headers: unknown }
  response?: { headers: unknown }
  body?: { text: string }
  frames?: Array<{ raw: string }>
}

/** Headers whose value is a URL: its secret parameters are masked like the request's own. */
const URL_HEADER = /^(location|content-location|referer|origin)$/i

function maskUrlHeaders(pairs: unknown, found: Set<string>): void {
  if (!Array.isArray(pairs)) return
  for (const pair of pairs as NameValue[])
    if (typeof pair?.value === 'string' && URL_HEADER.test(String(pair.name))) pair.value = maskUrl(pair.value, found)
}

const headerValue = (pairs: unknown, name: string): string | undefined =>
  Array.isArray(pairs)
    ? (pairs as NameValue[]).find((pair) => String(pair?.name).toLowerCase() === name)?.value
    : undefined

const LEFT_OUT = '(left out by syncscope doctor: not a shape request)'

/**
 * A response body (decoded when the HAR holds it base64-encoded, where secrets would pass unseen): a shape request's
 * masked, any other's left out.
 */
function maskHarContent(entry: HarEntryDoc, shape: boolean, found: Set<string>): void {
  const content = entry.response.content
  if (!content || typeof content.text !== 'string') return
  const text = content.encoding === 'base64' ? Buffer.from(content.text, 'base64').toString('utf8') : content.text
  delete content.encoding
  const contentType = headerValue(entry.response.headers, 'content-type')
  const declared = `${typeof content.mimeType === 'string' ? content.mimeType : ''} ${contentType ?? ''}`
  content.text = shape ? maskShapeBody(text, isEventStream(declared, text), found) : LEFT_OUT
}

function maskHarEntry(entry: HarEntryDoc, shape: boolean, found: Set<string>): void {
  entry.request.url = maskUrl(entry.request.url, found)
  maskUrlHeaders(entry.request.headers, found)
  maskUrlHeaders(entry.response.headers, found)
  maskPairs(entry.request.headers, found)
  maskPairs(entry.request.queryString, found)
  maskPairs(entry.request.cookies, found, true)
  maskPairs(entry.response.headers, found)
  maskPairs(entry.response.cookies, found, true)
  if (typeof entry.response.redirectURL === 'string')
    entry.response.redirectURL = maskUrl(entry.response.redirectURL, found)
  if (entry.request.postData) {
    maskPairs(entry.request.postData.params, found, !shape)
    if (typeof entry.request.postData.text === 'string')
      entry.request.postData.text = shape ? maskBodyText(entry.request.postData.text, found) : MASK
  }
  maskHarContent(entry, shape, found)
  if (Array.isArray(entry._frames))
    entry._frames = shape ? entry._frames.map((frame) => ({ ...frame, raw: maskSseBlock(frame.raw, found) })) : []
  if (entry._webSocketMessages !== undefined) entry._webSocketMessages = []
}

function maskRecordingExchange(exchange: RecordingExchangeDoc, found: Set<string>): void {
  exchange.request.url = maskUrl(exchange.request.url, found)
  maskHeaderTuples(exchange.request.headers, found)
  if (exchange.response) maskHeaderTuples(exchange.response.headers, found)
  const contentType = Array.isArray(exchange.response?.headers)
    ? (exchange.response.headers as Array<[string, string]>).find(
        ([name]) => name.toLowerCase() === 'content-type'
      )?.[1]
    : null
  if (exchange.body)
    exchange.body.text = maskShapeBody(exchange.body.text, isEventStream(contentType, exchange.body.text), found)
  for (const frame of exchange.frames ?? []) frame.raw = maskSseBlock(frame.raw, found)
}

/**
 * The file with tokens, cookies and secrets masked, to attach to a bug report: credential headers and cookies,
 * credential and OAuth (`code`, `state`) parameters in every URL (query and fragment), secret fields of bodies (JSON,
 * forms, each SSE event, the tap's frames; base64 bodies decoded first), JWTs, and every occurrence of those values
 * elsewhere. Bodies and frames of requests that are not shape requests (the app's own API, logins) are dropped.
 */
export function redactRecording(text: string): string {
  const input = readRecording(text)
  const json = JSON.parse(text.replace(/^\uFEFF/, '')) as Record<string, unknown>
  const found = new Set<string>()
  if (input.kind === 'har') {
    const entries = (json.log as { entries: HarEntryDoc[] }).entries
    entries.forEach((entry, index) => maskHarEntry(entry, isShapeRequest(input.exchanges[index]!), found))
  } else {
    for (const exchange of json.exchanges as RecordingExchangeDoc[]) maskRecordingExchange(exchange, found)
  }
  return scrub(JSON.stringify(json, null, 2), found)
}
