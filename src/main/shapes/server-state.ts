import { isLocalPostgres, readReplicationSlots } from '../db/replication-slots'
import type {
  ReplicationState,
  ServerState,
  ShapeQuery,
  ShapeSortKey,
  ShapeState
} from '../../shared/protocol/debug-shapes'
import type { ResolvedShape } from './definition/definition'
import { heldLongPolls } from './http/serve-log'
import { openSseStreams } from './http/sse'
import type { ShapeService } from './service'
import type { Shape } from './storage/shape'
import { formatOffset } from './storage/offset'
import { printedTableName } from '../../shared/sql-names'

/**
 * The shape server's state, read on demand (nothing is counted per change or per request for it): its shapes, their
 * readers and files, how close the limits are, and the replication slots. `GET /v1/debug/shapes` and the UI's
 * `server.state` call both answer it.
 */
export async function serverState(service: ShapeService, query: ShapeQuery): Promise<ServerState> {
  const replication = readReplicationSlots(service.pool, {
    ourSlot: service.slotName,
    localServer: isLocalPostgres(service.databaseUrl)
  })
  const { matched, page, offset, next } = selectShapes(service, query)
  let longPolls = 0
  let sseStreams = 0
  for (const shape of service.shapesByLastUse()) {
    longPolls += heldLongPolls(shape)
    sseStreams += openSseStreams(shape)
  }
  const health = service.health()
  const { maxShapes, maxDiskBytes } = service.bounds
  return {
    server: {
      status: health.status,
      message: health.status === 'active' ? null : health.message,
      global_last_seen_lsn: service.globalLsn.toString(),
      shapes: service.shapeCount,
      max_shapes: maxShapes,
      disk_used_bytes: service.diskUsed,
      max_disk_bytes: Number.isFinite(maxDiskBytes) ? maxDiskBytes : 0,
      long_polls: longPolls,
      sse_streams: sseStreams
    },
    replication: withServiceStatus(await replication, health),
    matched,
    offset,
    shapes: page.map(({ shape, rank }) => shapeStateOf(shape, rank)),
    next
  }
}

/** The engine's own view: a stream that is down is a warning even while Postgres still shows the slot active. */
function withServiceStatus(
  replication: ReplicationState,
  health: ReturnType<ShapeService['health']>
): ReplicationState {
  if (health.status === 'active') return replication
  return {
    ...replication,
    warnings: [
      ...replication.warnings,
      {
        slot_name: replication.slot_name,
        level: 'critical',
        message: `the shape server is ${health.status}: ${health.message}`
      }
    ]
  }
}

interface Ranked {
  shape: Shape
  /** 1 for the least recently used shape. */
  rank: number
}

/** The page of shapes the query asks for: filtered, ordered, then cut; linear but for the sort of what matched. */
function selectShapes(
  service: ShapeService,
  query: ShapeQuery
): { matched: number; page: Ranked[]; offset: number; next: string | null } {
  const needle = query.filter.trim().toLowerCase()
  const ranked: Ranked[] = []
  let rank = 0
  for (const shape of service.shapesByLastUse()) {
    rank += 1
    if (needle === '' || haystack(shape).includes(needle)) ranked.push({ shape, rank })
  }
  const { key, direction } = query.sort
  const lastUseOrder = key === 'last_used' && direction === 'ascending'
  const ordered = lastUseOrder ? ranked : sorted(ranked, key, direction)
  const start = (query.after === undefined ? 0 : firstAfter(ordered, Number(query.after))) + query.offset
  const page = ordered.slice(start, start + query.limit)
  const last = page.at(-1)
  const more = start + page.length < ordered.length
  return {
    matched: ordered.length,
    page,
    offset: Math.min(start, ordered.length),
    next: lastUseOrder && more && last ? String(last.shape.useSequence) : null
  }
}

/** Index of the first shape used after `sequence`: the last-use order is ascending in it. */
function firstAfter(ordered: Ranked[], sequence: number): number {
  let low = 0
  let high = ordered.length
  while (low < high) {
    const mid = (low + high) >>> 1
    if ((ordered[mid] as Ranked).shape.useSequence <= sequence) low = mid + 1
    else high = mid
  }
  return low
}

const haystack = (shape: Shape): string =>
  `${shape.handle}\n${printedTableName(shape.definition.table)}\n${shape.definition.input.where ?? ''}\n${shape.snapshotPhase}`.toLowerCase()

/** Each key's values are all numbers or all strings. */
const SORT_VALUES: Record<ShapeSortKey, (entry: Ranked) => number | string> = {
  last_used: ({ rank }) => rank,
  handle: ({ shape }) => shape.handle,
  table: ({ shape }) => printedTableName(shape.definition.table),
  phase: ({ shape }) => shape.snapshotPhase,
  disk_bytes: ({ shape }) => shape.diskBytes,
  log_entries: ({ shape }) => shape.log.size,
  long_polls: ({ shape }) => heldLongPolls(shape),
  sse_streams: ({ shape }) => openSseStreams(shape),
  last_change: ({ shape }) => shape.lastChangeAt ?? -1,
  created: ({ shape }) => Date.parse(shape.createdAt)
}

/**
 * Ordered by one value each (read once per shape), ties in last-use order. Indexes are sorted, not objects: 100,000
 * shapes sort in tens of milliseconds, which the event loop (and every waiting request) would otherwise wait for.
 */
function sorted(ranked: Ranked[], key: ShapeSortKey, direction: 'ascending' | 'descending'): Ranked[] {
  const valueOf = SORT_VALUES[key]
  const sign = direction === 'ascending' ? 1 : -1
  const order = new Uint32Array(ranked.length)
  for (let index = 0; index < order.length; index++) order[index] = index
  const first = ranked[0]
  if (first && typeof valueOf(first) === 'number') {
    const values = Float64Array.from(ranked, (entry) => valueOf(entry) as number)
    order.sort((a, b) => ((values[a] as number) - (values[b] as number)) * sign || a - b)
  } else {
    const values = ranked.map((entry) => String(valueOf(entry)))
    order.sort((a, b) => {
      const x = values[a] as string
      const y = values[b] as string
      return (x < y ? -1 : x > y ? 1 : 0) * sign || a - b
    })
  }
  return Array.from(order, (index) => ranked[index] as Ranked)
}

const isoOrNull = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString())

function definitionOf(definition: ResolvedShape): ShapeState['definition'] {
  return {
    table: printedTableName(definition.table),
    where: definition.input.where,
    params: definition.input.params,
    columns: definition.input.columns === null ? null : definition.columns,
    replica: definition.replica,
    log: definition.log,
    subquery_dependencies: (definition.subquery?.dependencies ?? []).map((dependency) => ({
      table: printedTableName(dependency.table),
      columns: dependency.columns,
      where: dependency.plan.sql === '(true)' ? null : dependency.plan.sql
    }))
  }
}

function shapeStateOf(shape: Shape, rank: number): ShapeState {
  return {
    handle: shape.handle,
    definition: definitionOf(shape.definition),
    phase: shape.snapshotPhase,
    failure: shape.failure?.message ?? null,
    snapshot_chunks: shape.readyChunks,
    disk_bytes: shape.diskBytes,
    snapshot_bytes: shape.snapshotDiskBytes,
    log_bytes: shape.log.diskBytes,
    log_entries: shape.log.size,
    latest_offset: formatOffset(shape.lastOffset),
    long_polls: heldLongPolls(shape),
    sse_streams: openSseStreams(shape),
    created_at: shape.createdAt,
    last_change_at: isoOrNull(shape.lastChangeAt),
    last_used_at: isoOrNull(shape.lastUsedAt),
    eviction_rank: rank
  }
}
