import { isCredentialHeader, isCredentialParam } from '../../shared/shape-client/credentials'
import { readRecording } from './input'
import { isShapeRequest } from './timeline'

const MASK = '•••'
/** JSON fields and form fields that hold secrets, in request and response bodies. */
const SECRET_FIELD =
  /token|secret|password|passwd|api[-_]?key|authorization|cookie|credential|session|code_verifier|client_assertion/i
/** JSON Web Tokens anywhere in the text. */
const JWT = /eyJ[\w-]{4,}\.[\w-]{4,}\.[\w-]*/g

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

function maskUrl(url: string, found: Set<string>): string {
  try {
    const parsed = new URL(url)
    for (const [name, value] of [...parsed.searchParams]) {
      if (isCredentialParam(name) || SECRET_FIELD.test(name)) {
        found.add(value)
        parsed.searchParams.set(name, MASK)
      }
    }
    if (parsed.password) {
      found.add(parsed.password)
      parsed.password = MASK
    }
    return parsed.toString()
  } catch {
    return url
  }
}

function maskBodyText(text: string, found: Set<string>): string {
  try {
    return JSON.stringify(maskFields(JSON.parse(text) as Json, found))
  } catch {
    const form = new URLSearchParams(text)
    let changed = false
    for (const [name, value] of [...form]) {
      if (SECRET_FIELD.test(name) && value) {
        found.add(value)
        form.set(name, MASK)
        changed = true
      }
    }
    return changed ? form.toString() : text
  }
}

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
  return result.replace(JWT, MASK)
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
  response: { headers?: unknown; cookies?: unknown; redirectURL?: unknown; content?: { text?: unknown } }
}

interface RecordingExchangeDoc {
  request: { url: string; headers: unknown }
  response?: { headers: unknown }
  body?: { text: string }
}

/**
 * The file with tokens, cookies and secrets masked, to attach to a bug report: credential headers and cookies,
 * credential query parameters, secret fields of bodies, JWTs, and every occurrence of those values elsewhere. Bodies of
 * requests that are not shape requests (the app's own API, logins) are dropped.
 */
export function redactRecording(text: string): string {
  const input = readRecording(text)
  const json = JSON.parse(text.replace(/^\uFEFF/, '')) as Record<string, unknown>
  const found = new Set<string>()
  if (input.kind === 'har') {
    const entries = (json.log as { entries: HarEntryDoc[] }).entries
    entries.forEach((entry, index) => {
      const shape = isShapeRequest(input.exchanges[index]!)
      entry.request.url = maskUrl(entry.request.url, found)
      maskPairs(entry.request.headers, found)
      maskPairs(entry.request.queryString, found)
      maskPairs(entry.request.cookies, found, true)
      maskPairs(entry.response.headers, found)
      maskPairs(entry.response.cookies, found, true)
      if (typeof entry.response.redirectURL === 'string')
        entry.response.redirectURL = maskUrl(entry.response.redirectURL, found)
      if (entry.request.postData) {
        maskPairs(entry.request.postData.params, found)
        if (typeof entry.request.postData.text === 'string')
          entry.request.postData.text = shape ? maskBodyText(entry.request.postData.text, found) : MASK
      }
      const content = entry.response.content
      if (content && typeof content.text === 'string')
        content.text = shape ? maskBodyText(content.text, found) : '(left out by syncscope doctor: not a shape request)'
    })
  } else {
    for (const exchange of json.exchanges as RecordingExchangeDoc[]) {
      exchange.request.url = maskUrl(exchange.request.url, found)
      maskHeaderTuples(exchange.request.headers, found)
      if (exchange.response) maskHeaderTuples(exchange.response.headers, found)
      if (exchange.body) exchange.body.text = maskBodyText(exchange.body.text, found)
    }
  }
  return scrub(JSON.stringify(json, null, 2), found)
}
