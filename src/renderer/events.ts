import { events, isEventName, type EventName, type EventPayload } from '../shared/contract'

/** One event main pushed, its payload checked against the contract. */
export type AppEvent = { [N in EventName]: { name: N; payload: EventPayload<N> } }[EventName]

export type Warn = (message: string) => void

/**
 * Checks an event against the contract: an unknown name or a payload that does not match is dropped with one
 * warning naming the event, so a main/renderer version skew or a bug in main never crashes a page.
 */
export function decodeEvent(name: unknown, payload: unknown, warn: Warn = console.warn): AppEvent | null {
  if (typeof name !== 'string' || !isEventName(name)) {
    warn(`syncscope: dropped an event with an unknown name (${JSON.stringify(name) ?? 'none'})`)
    return null
  }
  const parsed = events[name].payload.safeParse(payload)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : ''
    warn(
      `syncscope: dropped a '${name}' event whose payload does not match the contract${where}: ${issue?.message ?? 'invalid'}`
    )
    return null
  }
  return { name, payload: parsed.data } as AppEvent
}

/** An event as the headless server's `/events` stream frames it: `{"name": …, "payload": …}`. */
export function decodeEventFrame(data: string, warn: Warn = console.warn): AppEvent | null {
  let frame: unknown
  try {
    frame = JSON.parse(data)
  } catch {
    warn(`syncscope: dropped an event frame that is not JSON (${data.slice(0, 60)})`)
    return null
  }
  if (typeof frame !== 'object' || frame === null) {
    warn(`syncscope: dropped an event frame that is not an object (${data.slice(0, 60)})`)
    return null
  }
  const { name, payload } = frame as { name?: unknown; payload?: unknown }
  return decodeEvent(name, payload, warn)
}
