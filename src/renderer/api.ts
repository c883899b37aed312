import type { CallInput, CallName, CallOutput } from '../shared/contract'
import { RpcErrorSchema, type RpcErrorBody } from '../shared/contract/errors'
import { decodeEvent, decodeEventFrame, type AppEvent } from './events'

interface Bridge {
  call(name: string, input: unknown): Promise<unknown>
  subscribe(listener: (name: string, payload: unknown) => void): () => void
}

/** The headless shell's bridge delivers events decoded already (one decode per frame, not per listener). */
interface HttpBridge {
  call: Bridge['call']
  subscribe(listener: (event: AppEvent) => void): () => void
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
  return new ApiError(
    status,
    parsed.success ? parsed.data : { error: { code: 'http_error', message: `HTTP ${status}` } }
  )
}

/** The Electron preload bridge when present, the headless shell's HTTP contract otherwise. */
const httpBridge: HttpBridge = {
  async call(name, input) {
    const response = await fetch(`/rpc/${encodeURIComponent(name)}`, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(input ?? {})
    })
    const body: unknown = await response.json().catch(() => null)
    return response.ok
      ? { ok: true, value: (body as { result: unknown }).result }
      : { ok: false, status: response.status, body }
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
const eventListeners = new Set<(event: AppEvent) => void>()
let eventSource: EventSource | null = null

function openEvents(): EventSource {
  const source = new EventSource('/events', { withCredentials: true })
  source.onmessage = (message: MessageEvent<string>) => {
    const event = decodeEventFrame(message.data)
    if (event) for (const listener of [...eventListeners]) listener(event)
  }
  return source
}

export const api = {
  async call<N extends CallName>(name: N, input: CallInput<N>): Promise<CallOutput<N>> {
    const outcome = (await (window.syncscope ?? httpBridge).call(name, input)) as Outcome
    if (!outcome.ok) throw toError(outcome.status, outcome.body)
    return outcome.value as CallOutput<N>
  },
  /** Every event main pushes that matches the contract; one that does not is dropped with a warning (see decodeEvent). */
  subscribe(listener: (event: AppEvent) => void): () => void {
    const ipc = window.syncscope
    if (!ipc) return httpBridge.subscribe(listener)
    return ipc.subscribe((name, payload) => {
      const event = decodeEvent(name, payload)
      if (event) listener(event)
    })
  }
}
