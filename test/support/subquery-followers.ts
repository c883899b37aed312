import { ShapeStream } from '@electric-sql/client'
import { createCollection } from '@tanstack/db'
import { electricCollectionOptions } from '@tanstack/electric-db-collection'
import type { Message } from './shape-http'
import { TagClient } from './subquery-client'
import { type RowsById, type WorkloadShape, textValues } from './subquery-workload'

/** A client following one shape until stopped: what it holds now, by issue id. */
export interface ShapeFollower {
  label: string
  shape: WorkloadShape
  rows(): RowsById
  /** Changes that did not fit what the client held (an insert of a held key, a change of an absent one). */
  anomalies(): string[]
  /** What the client received about an issue (its changes, and the move events that matched its tags), oldest first. */
  history(id: string): string[]
  /** Its last requests: status, handle and offset asked, offset answered. */
  requests(): string[]
  stop(): void
}

export type FollowerKind = 'ShapeStream long-poll' | 'ShapeStream SSE' | 'TanStack DB long-poll' | 'TanStack DB SSE'
export const FOLLOWER_KINDS: FollowerKind[] = [
  'ShapeStream long-poll',
  'ShapeStream SSE',
  'TanStack DB long-poll',
  'TanStack DB SSE'
]

/** Reconnects soon after the server comes back from a kill. */
const BACKOFF = { initialDelay: 100, maxDelay: 1_000, multiplier: 1.5 }

const streamOptions = (base: string, shape: WorkloadShape, sse: boolean, signal: AbortSignal, log: string[]) => ({
  url: `${base}/v1/shape`,
  params: { table: 'issues', where: shape.where, params: shape.params },
  liveSse: sse,
  signal,
  backoffOptions: BACKOFF,
  fetchClient: recordingFetch(log)
})

/** fetch that notes each request's handle and offset and the answer's status and offset (the last 40). */
function recordingFetch(log: string[]): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input))
    const asked = `${url.searchParams.get('handle') ?? '-'}@${url.searchParams.get('offset')}${url.searchParams.get('live') ? ' live' : ''}${url.searchParams.get('live_sse') ? ' sse' : ''}`
    try {
      const response = await fetch(input, init)
      log.push(`${response.status} ${asked} → ${response.headers.get('electric-offset') ?? '-'}`)
      return response
    } catch (error) {
      log.push(`failed ${asked}: ${(error as Error).message}`)
      throw error
    } finally {
      if (log.length > 40) log.splice(0, log.length - 40)
    }
  }
}

/** The official ShapeStream, materialised by the reference's tag rules (tags, move-in / move-out, must-refetch). */
function followWithShapeStream(base: string, shape: WorkloadShape, kind: FollowerKind): ShapeFollower {
  const controller = new AbortController()
  const client = new TagClient(base, {})
  const log: string[] = []
  const stream = new ShapeStream(streamOptions(base, shape, kind === 'ShapeStream SSE', controller.signal, log))
  stream.subscribe(
    (messages) => client.apply(messages as unknown as Message[]),
    (error) => client.anomalies.push(`stream failed: ${String(error)}`)
  )
  return {
    label: `${kind} (${shape.name})`,
    shape,
    rows: () => new Map([...client.rows.values()].map(({ value }) => [String(value.id), textValues(value)])),
    anomalies: () => client.anomalies,
    history: (id) => historyOf(client.seen, id),
    requests: () => log,
    stop: () => controller.abort()
  }
}

/** A TanStack DB collection synced by `@tanstack/electric-db-collection`, as an app would hold the shape. */
function followWithTanStack(base: string, shape: WorkloadShape, kind: FollowerKind, id: string): ShapeFollower {
  const controller = new AbortController()
  const log: string[] = []
  const collection = createCollection(
    electricCollectionOptions<Record<string, unknown>>({
      id,
      getKey: (row) => row.id as number,
      shapeOptions: streamOptions(base, shape, kind === 'TanStack DB SSE', controller.signal, log),
      startSync: true
    })
  )
  return {
    label: `${kind} (${shape.name})`,
    shape,
    rows: () => new Map([...collection.state.values()].map((row) => [String(row.id), textValues(row)])),
    // the collection applies changes as upserts and deletes and reports nothing that did not fit
    anomalies: () => (collection.status === 'error' ? [`collection ${collection.status}`] : []),
    history: () => [],
    requests: () => log,
    stop: () => {
      controller.abort()
      void collection.cleanup()
    }
  }
}

/** The messages about one issue, and the move events whose patterns match one of its tags' slots. */
function historyOf(seen: readonly Message[], id: string): string[] {
  const hashes = new Set<string>()
  const lines: string[] = []
  for (const message of seen) {
    const { headers } = message
    if (headers.control === 'must-refetch') lines.push('must-refetch')
    else if (headers.event) {
      const patterns = headers.patterns as Array<{ pos: number; value: string }>
      const matched = patterns.filter(({ pos, value }) => hashes.has(`${pos}:${value}`))
      if (matched.length > 0)
        lines.push(`${String(headers.event)} ${JSON.stringify(matched)} txids ${JSON.stringify(headers.txids)}`)
    } else if (message.value && String(message.value.id) === id) {
      for (const tag of (headers.tags as string[] | undefined) ?? [])
        tag.split('/').forEach((slot, pos) => slot && hashes.add(`${pos}:${slot}`))
      const { operation, txids, lsn, op_position, is_move_in, tags, active_conditions } = headers
      lines.push(
        JSON.stringify({
          operation,
          txids,
          lsn,
          op_position,
          is_move_in,
          tags,
          active_conditions,
          value: message.value
        })
      )
    }
  }
  return lines
}

let collections = 0

export function followShape(base: string, shape: WorkloadShape, kind: FollowerKind): ShapeFollower {
  if (kind.startsWith('TanStack')) return followWithTanStack(base, shape, kind, `issues-${(collections += 1)}`)
  return followWithShapeStream(base, shape, kind)
}
