import {
  simulateSharedCache,
  type Exchange,
  type Message,
  type SimulatedRequest
} from '../../../../shared/shape-client'
import { inBySummary } from '../membership-view'
import type { WorkbenchEngine } from './engine'
import { logRow, matchesFilter, matchesSearch } from './log-rows'
import type {
  FramesView,
  LogView,
  RequestRow,
  RequestsView,
  RowsView,
  RowView,
  SubsetView,
  ViewData,
  ViewQuery
} from './protocol'
import { FilteredSeqs, type FrameEntry, type LogEntry } from './recorder-index'

/** Rows of one window sent at most (a table shows a screenful and some overscan). */
const MAX_WINDOW = 500
/** Requests kept in the Requests view and its shared-cache simulation (the newest). */
export const REQUESTS_KEPT = 1_000
/** The simulation is redone at most this often while requests come and go. */
const SIMULATE_EVERY_MS = 500
/** Rows of a subset sent to the page. */
const SUBSET_ROWS_SENT = 500

const windowOf = (query: { start: number; end: number }, total: number) => {
  const start = Math.max(0, Math.min(query.start, total))
  return { start, end: Math.max(start, Math.min(query.end, total, start + MAX_WINDOW)) }
}

interface LabelledExchange {
  label: string
  exchange: Exchange
}

/** Computes what each of the page's views shows, from the engine, keeping per-view filters between updates. */
export class ViewBuilder {
  private readonly filters = new Map<string, FilteredSeqs>()
  private simulated: { at: number; exchanges: Exchange[]; results: SimulatedRequest[] } | null = null

  constructor(private readonly engine: WorkbenchEngine) {}

  build(id: string, query: ViewQuery): ViewData | null {
    switch (query.kind) {
      case 'rows':
        return this.rows(query)
      case 'row':
        return this.row(query.key)
      case 'log':
        return this.log(id, query)
      case 'frames':
        return this.frames(id, query)
      case 'requests':
        return this.requests(query)
      case 'subset':
        return this.subset(query.index)
      case 'latency':
        return this.engine.latency.view()
    }
  }

  /** Views no longer shown: their filters go. */
  retain(ids: Iterable<string>): void {
    const kept = new Set(ids)
    for (const id of this.filters.keys()) if (!kept.has(id)) this.filters.delete(id)
  }

  private rows(query: { start: number; end: number }): RowsView {
    const { rows: store } = this.engine
    const schema = this.engine.stream.current.schema
    const stored = store.columns()
    const names = schema ? Object.keys(schema) : stored
    const at = new Map(stored.map((name, index) => [name, index]))
    const { start, end } = windowOf(query, store.size)
    const rows: RowsView['rows'] = []
    for (let index = start; index < end; index += 1) {
      const row = store.rowAt(index)
      if (!row) break
      const membership = this.engine.membership(row.key)
      rows.push({
        key: row.key,
        cells: names.map((name) => row.cells[at.get(name) ?? -1] ?? null),
        mark: this.engine.flashOf(row.key),
        inBy: inBySummary(membership),
        tags: membership?.tags.map((slots) => slots.join('/')).join('\n') ?? ''
      })
    }
    let tagged = false
    for (let index = 0; index < Math.min(50, store.size) && !tagged; index += 1)
      tagged = this.engine.membership(store.rowAt(index)?.key ?? '') !== null
    return {
      kind: 'rows',
      total: store.size,
      columns: names.map((name) => ({ name, type: schema?.[name]?.type ?? null })),
      tagged,
      start,
      rows
    }
  }

  private row(key: string): RowView {
    const row = this.engine.rows.get(key)
    return { kind: 'row', key, present: row !== undefined, row: row ?? {}, membership: this.engine.membership(key) }
  }

  private filtered(id: string, key: string, test: (seq: number) => boolean): FilteredSeqs {
    let filter = this.filters.get(id)
    if (filter?.query !== key) {
      filter = new FilteredSeqs(key, test)
      this.filters.set(id, filter)
    }
    return filter
  }

  private log(id: string, query: Extract<ViewQuery, { kind: 'log' }>): LogView {
    const { index } = this.engine
    const needle = query.search.trim().toLowerCase()
    const filter = this.filtered(id, `${query.filter}\n${needle}`, (seq) => {
      const entry = index.entry(seq) as LogEntry | undefined
      return entry !== undefined && matchesFilter(entry, query.filter) && matchesSearch(entry, needle)
    })
    const matched = filter.update(index.log, index.firstKept)
    const { start, end } = windowOf(query, matched.length)
    const context = {
      before: (message: Message) => this.engine.before.get(message),
      movedOut: (message: Message) => this.engine.movedOut.get(message)?.length
    }
    const rows = matched.slice(start, end).flatMap((seq) => {
      const entry = index.entry(seq) as LogEntry | undefined
      return entry ? [logRow(seq, entry, context)] : []
    })
    return { kind: 'log', total: index.log.seqs.length, matched: matched.length, start, rows }
  }

  private frames(id: string, query: Extract<ViewQuery, { kind: 'frames' }>): FramesView {
    const { index } = this.engine
    const needle = query.search.trim().toLowerCase()
    const filter = this.filtered(id, needle, (seq) => {
      const entry = index.entry(seq) as FrameEntry | undefined
      return entry !== undefined && (needle === '' || entry.frame.raw.toLowerCase().includes(needle))
    })
    const matched = filter.update(index.frames, index.firstKept)
    const { start, end } = windowOf(query, matched.length)
    const frames = index.frames
    const rows = matched.slice(start, end).flatMap((seq) => {
      const entry = index.entry(seq) as FrameEntry | undefined
      if (!entry) return []
      const position = frames.indexAfter(seq) - 1
      const previous = position > 0 ? (index.entry(frames.seqs[position - 1] as number) as FrameEntry) : undefined
      return [
        {
          n: frames.dropped + position + 1,
          at: entry.at,
          gap: previous ? Math.round(entry.at - previous.at) : null,
          requestId: entry.requestId,
          kind: entry.frame.kind,
          raw: entry.frame.raw
        }
      ]
    })
    return { kind: 'frames', total: frames.seqs.length, matched: matched.length, start, rows }
  }

  /** Every client's exchanges in the order they were sent (the newest REQUESTS_KEPT), labelled by client. */
  private exchanges(): LabelledExchange[] {
    const recorders = this.engine.recorders
    const many = recorders.length > 1
    return recorders
      .flatMap((recorder, client) =>
        recorder.exchanges.slice(-REQUESTS_KEPT).map((exchange) => ({
          label: `${many ? `${client + 1}·` : ''}#${exchange.request.id}`,
          exchange
        }))
      )
      .sort((a, b) => a.exchange.request.at - b.exchange.request.at)
      .slice(-REQUESTS_KEPT)
  }

  /** What a shared cache would have answered each request; redone when the requests changed, at most twice a second. */
  private simulation(exchanges: Exchange[]): SimulatedRequest[] {
    const previous = this.simulated
    const same =
      previous !== null &&
      previous.exchanges.length === exchanges.length &&
      previous.exchanges.every((exchange, index) => exchange === exchanges[index])
    if (previous && same && performance.now() - previous.at < SIMULATE_EVERY_MS) return previous.results
    if (previous && !same && performance.now() - previous.at < SIMULATE_EVERY_MS) {
      // new requests meanwhile: the known ones keep their verdicts until the next run
      const known = new Map(previous.exchanges.map((exchange, index) => [exchange, previous.results[index]]))
      return exchanges.map((exchange) => known.get(exchange) ?? pending)
    }
    const results = simulateSharedCache(exchanges)
    this.simulated = { at: performance.now(), exchanges, results }
    return results
  }

  private requests(query: Extract<ViewQuery, { kind: 'requests' }>): RequestsView {
    const all = this.exchanges()
    const results = this.simulation(all.map((entry) => entry.exchange))
    const rows: RequestRow[] = all.map(({ label, exchange }, index) => requestRow(label, exchange, results, all, index))
    const needle = query.search.trim().toLowerCase()
    const matching = needle
      ? rows.filter((row) => `${row.label} ${row.status ?? ''} ${row.live} ${row.url}`.toLowerCase().includes(needle))
      : rows
    const { start, end } = windowOf(query, matching.length)
    const chosen = all.find((entry) => entry.label === query.selected) ?? all[all.length - 1]
    const total = this.engine.recorders.reduce((sum, recorder) => sum + recorder.exchanges.length, 0)
    return {
      kind: 'requests',
      total,
      kept: all.length,
      matched: matching.length,
      clients: this.engine.recorders.length,
      start,
      rows: matching.slice(start, end),
      selected: chosen
        ? {
            label: chosen.label,
            exchange: chosen.exchange,
            simulated: results[all.indexOf(chosen)] ?? null
          }
        : null
    }
  }

  private subset(index: number): SubsetView | null {
    const snapshot = this.engine.subsets[index]
    if (!snapshot) return null
    return {
      kind: 'subset',
      index,
      snapshot: { ...snapshot, rowCount: snapshot.rows.length, rows: snapshot.rows.slice(0, SUBSET_ROWS_SENT) }
    }
  }
}

const pending: SimulatedRequest = {
  outcome: 'MISS',
  reason: 'not simulated yet',
  sharedTtlSeconds: null,
  collapsesWith: []
}

function pathAndQuery(url: string): string {
  const parsed = new URL(url)
  return `${parsed.pathname}${parsed.search}`
}

function requestRow(
  label: string,
  exchange: Exchange,
  results: SimulatedRequest[],
  all: LabelledExchange[],
  index: number
): RequestRow {
  const { request, response, body, failure } = exchange
  const done = body?.at ?? failure?.at
  const simulated = results[index] ?? null
  return {
    label,
    status: response?.status ?? null,
    failed: failure !== undefined && response === undefined,
    live: request.live,
    simulated,
    collapsesWith: (simulated?.collapsesWith ?? []).map((other) => all[other]?.label ?? '?'),
    ms: done ? Math.round(done - request.at) : null,
    size: body ? body.size : null,
    url: pathAndQuery(request.url)
  }
}
