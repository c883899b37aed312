import type { CallInput, CallName, CallOutput, EventName } from '../shared/contract'
import { RpcErrorSchema, type RpcErrorBody } from '../shared/contract/errors'

interface Bridge {
  call(name: string, input: unknown): Promise<unknown>
  subscribe(listener: (name: string, payload: unknown) => void): () => void
}

declare global {
  interface Window {
    syncscope?: Bridge
  }
}

/** A failed call, with the code and message main gave (and field issues for invalid input). */
export class ApiError extends Error {
  readonly code: string
  readonly status: number
  readonly issues: RpcErrorBody['error']['issues']
  constructor(status: number, body: RpcErrorBody) {
    super(body.error.message)
    this.name = 'ApiError'
    this.code = body.error.code
    this.status = status
    this.issues = body.error.issues
  }
}

type Outcome = { ok: true; value: unknown } | { ok: false; status: number; body: unknown }

function toError(status: number, body: unknown): ApiError {
  const parsed = RpcErrorSchema.safeParse(body)
  return new ApiError(status, parsed.success ? parsed.data : { error: { code: 'http_error', message: `HTTP ${status}` } })
}

/** The Electron preload bridge when present, the headless shell's HTTP contract otherwise. */
const httpBridge: Bridge = {
  async call(name, input) {
    const response = await fetch(`/rpc/${encodeURIComponent(name)}`, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(input ?? {})
    })
    const body: unknown = await response.json().catch(() => null)
    return response.ok ? { ok: true, value: (body as { result: unknown }).result } : { ok: false, status: response.status, body }
  },
  subscribe(listener) {
    eventListeners.add(listener)
    eventSource ??= openEvents()
    return () => {
      eventListeners.delete(listener)
      if (eventListeners.size > 0) return
      eventSource?.close()
      eventSource = null
    }
  }
}

/**
 * One event stream for every subscriber of the page: Chromium gives a host six HTTP/1.1 connections, and a stream per
 * hook took them all, so the page's calls waited behind its own event streams.
 */
const eventListeners = new Set<(name: string, payload: unknown) => void>()
let eventSource: EventSource | null = null

function openEvents(): EventSource {
  const source = new EventSource('/events', { withCredentials: true })
  source.onmessage = (event: MessageEvent<string>) => {
    const { name, payload } = JSON.parse(event.data) as { name: string; payload: unknown }
    for (const listener of [...eventListeners]) listener(name, payload)
  }
  return source
}

const bridge = (): Bridge => window.syncscope ?? httpBridge

export const api = {
  async call<N extends CallName>(name: N, input: CallInput<N>): Promise<CallOutput<N>> {
    const outcome = (await bridge().call(name, input)) as Outcome
    if (!outcome.ok) throw toError(outcome.status, outcome.body)
    return outcome.value as CallOutput<N>
  },
  /** Every event main pushes; payloads are typed by name at the use site (see useEvent). */
  subscribe(listener: (name: EventName, payload: unknown) => void): () => void {
    return bridge().subscribe((name, payload) => listener(name as EventName, payload))
  }
}
