import type { Rows } from './random-writes'
import { sleep } from './random-writes'
import { type Message, controls, get, materialiseStrictly, messages } from './shape-http'

/** What a follower holds while it runs; `done` settles once its signal aborts (rejects on an unexpected status). */
export interface Follower {
  rows: Rows
  /** Changes that did not fit the rows (an insert of a present key, a change of an absent one) or came twice. */
  anomalies: string[]
  /** Every handle it synced from. */
  handles: Set<string>
  /** How many 409 must-refetch answers made it start over. */
  conflicts(): number
  done: Promise<void>
}

/**
 * A client as the protocol describes it, until `signal` aborts: initial sync, live long-polls, the same handle and
 * offset again after a network error or a 5xx, from -1 after a 409 must-refetch. Never starts over on its own.
 */
export function followShape(base: string, shape: Record<string, string>, signal: AbortSignal): Follower {
  const rows: Rows = new Map()
  const anomalies: string[] = []
  const handles = new Set<string>()
  const seen = new Set<string>()
  let conflicts = 0
  let handle = ''
  let offset = '-1'
  let live = false
  const apply = (list: Message[]) => {
    for (const message of list) {
      if (!message.key || message.headers.lsn === undefined) continue
      const position = `${String(message.headers.lsn)}_${String(message.headers.op_position)}_${message.key}`
      if (seen.has(position)) anomalies.push(`change ${position} delivered twice`)
      seen.add(position)
    }
    materialiseStrictly(rows, list, anomalies)
  }
  const done = (async () => {
    while (!signal.aborted) {
      const params: Record<string, string> = { ...shape, offset }
      if (offset !== '-1') params.handle = handle
      if (live) params.live = 'true'
      const response = await get(base, params, { signal }).catch(() => null)
      if (!response || response.status >= 500) {
        await sleep(100)
        continue
      }
      if (response.status === 409) {
        conflicts += 1
        rows.clear()
        seen.clear()
        offset = '-1'
        live = false
        continue
      }
      if (response.status !== 200) throw new Error(`${response.status} ${response.text}`)
      apply(messages(response))
      if (offset === '-1') handle = response.header('@handle') ?? ''
      handles.add(handle)
      offset = response.header('@offset') ?? offset
      if (controls(response).includes('up-to-date')) live = true
    }
  })().catch((error: unknown) => {
    if (!signal.aborted) throw error
  })
  return { rows, anomalies, handles, conflicts: () => conflicts, done }
}
