import { ShapeStreamError, type ResolvableRecord, type ShapeStreamState } from '../../../../shared/shape-client'
import type { WireError, WireRecord, WireState } from './protocol'

/** Any error as data: a ShapeStreamError keeps its kind, status, body and headers. */
export function errorToWire(error: unknown): WireError {
  if (error instanceof ShapeStreamError) {
    const { kind, message, url, status, body, headers } = error
    return { kind, message, url, status, body, headers }
  }
  return {
    kind: 'client',
    message: (error as Error)?.message ?? String(error),
    url: '',
    status: null,
    body: null,
    headers: []
  }
}

export function errorFromWire(wire: WireError): ShapeStreamError {
  return new ShapeStreamError(wire.kind, wire.message, wire.url, wire.status, wire.body, wire.headers)
}

export function stateToWire(state: ShapeStreamState): WireState {
  return { ...state, error: state.error ? errorToWire(state.error) : null }
}

/** Values as they are; functions replaced by a number the other side calls back with (see `remote`). */
export function recordToWire(record: ResolvableRecord, remember: (call: () => unknown) => number): WireRecord {
  const wire: WireRecord = {}
  for (const [name, value] of Object.entries(record)) {
    if (typeof value === 'function') wire[name] = { remote: remember(value) }
    else if (value !== undefined) wire[name] = value
  }
  return wire
}

export function recordFromWire(
  wire: WireRecord,
  call: (remote: number) => Promise<string | undefined>
): ResolvableRecord {
  const record: ResolvableRecord = {}
  for (const [name, value] of Object.entries(wire))
    record[name] = typeof value === 'string' ? value : () => call(value.remote)
  return record
}
