import type { EventName, EventPayload } from '../shared/contract'

export type EventListener = <N extends EventName>(name: N, payload: EventPayload<N>) => void

/** Events main pushes to every connected renderer (IPC windows and HTTP/SSE clients alike). */
export class EventBus {
  private readonly listeners = new Set<EventListener>()

  emit<N extends EventName>(name: N, payload: EventPayload<N>): void {
    for (const listener of this.listeners) listener(name, payload)
  }

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }
}
