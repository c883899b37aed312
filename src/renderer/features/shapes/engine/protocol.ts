import type {
  AppliedSnapshot,
  HeaderList,
  LiveMode,
  Membership,
  ShapeDraft,
  ShapeErrorKind,
  ShapeStreamState,
  SimulatedRequest,
  Subset,
  SubsetMethod,
  Exchange
} from '../../../../shared/shape-client'
import type { LatencyView } from './latency'
import type { LogFilter, LogRow } from './log-rows'

/**
 * What the page and the workbench's worker say to each other. Everything here crosses `postMessage` (structured
 * clone): plain data only. Functions the stream needs (a proxy token per request, onError) stay on the page and are
 * named by number (`{ remote }`); the worker asks the page to call them.
 */

export type WireValue = string | { remote: number }
export type WireRecord = Record<string, WireValue>

export interface EngineConfig {
  url: string
  definition: ShapeDraft
  headers: WireRecord
  params: Record<string, string>
  /** The page has an onError for 4xx answers (a proxy target renews its token). */
  onError: boolean
  live: LiveMode
  offset: '-1' | 'now'
  clients: number
  /** Where the server tells its commit and append times (`GET /v1/debug/commit-times`), when it may. */
  commitTimes: { url: string; params: Record<string, string> } | null
  /** Lines for the Log noted before the stream started (a gatekeeper's grant). */
  notes: string[]
}

/** A ShapeStreamError as data. */
export interface WireError {
  kind: ShapeErrorKind
  message: string
  url: string
  status: number | null
  body: string | null
  headers: HeaderList
}

export type WireState = Omit<ShapeStreamState, 'error'> & { error: WireError | null }

export interface Summary {
  state: WireState
  counts: { insert: number; update: number; delete: number; reset: number }
  rowCount: number
  /** What every request of the stream carries besides the definition: offset, log, handle. */
  protocolParams: Record<string, string>
  /** Requests of every client. */
  requests: number
  /** Changes received per second, the last few seconds (the Rows tab's rate). */
  rate: number
}

export type ViewQuery =
  | { kind: 'rows'; start: number; end: number }
  | { kind: 'row'; key: string }
  | { kind: 'log'; filter: LogFilter; search: string; start: number; end: number }
  | { kind: 'frames'; search: string; start: number; end: number }
  | { kind: 'requests'; search: string; start: number; end: number; selected: string | null }
  | { kind: 'subset'; index: number }
  | { kind: 'latency' }

export interface RowsView {
  kind: 'rows'
  total: number
  columns: Array<{ name: string; type: string | null }>
  /** A subquery shape: rows carry tags, the table shows which disjuncts hold each. */
  tagged: boolean
  start: number
  rows: Array<{
    key: string
    cells: Array<string | null>
    mark: { kind: 'insert' | 'update'; at: number } | null
    inBy: string
    tags: string
  }>
}

export interface RowView {
  kind: 'row'
  key: string
  present: boolean
  row: Record<string, string | null>
  membership: Membership | null
}

export interface LogView {
  kind: 'log'
  total: number
  matched: number
  start: number
  rows: LogRow[]
}

export interface FrameRow {
  n: number
  at: number
  gap: number | null
  requestId: number
  kind: 'data' | 'comment'
  raw: string
}

export interface FramesView {
  kind: 'frames'
  total: number
  matched: number
  start: number
  rows: FrameRow[]
}

export interface RequestRow {
  /** `#3`, or `2·#3` (client 2's third request) when several clients run. */
  label: string
  status: number | null
  failed: boolean
  live: LiveMode
  simulated: SimulatedRequest | null
  /** The labels of the requests a collapsing CDN would merge this one with. */
  collapsesWith: string[]
  ms: number | null
  size: number | null
  url: string
}

export interface RequestsView {
  kind: 'requests'
  total: number
  /** Requests kept and shown (the newest). */
  kept: number
  matched: number
  clients: number
  start: number
  rows: RequestRow[]
  selected: { label: string; exchange: Exchange; simulated: SimulatedRequest | null } | null
}

export interface SubsetView {
  kind: 'subset'
  index: number
  snapshot: Omit<AppliedSnapshot, 'rows'> & { rowCount: number; rows: AppliedSnapshot['rows'] }
}

export type ViewData = RowsView | RowView | LogView | FramesView | RequestsView | SubsetView | LatencyView

export type Ask = { kind: 'drop' } | { kind: 'subset'; subset: Subset; method: SubsetMethod } | { kind: 'recording' }

/** The page → the worker. */
export type ToEngine =
  | { type: 'start'; config: EngineConfig }
  | { type: 'stop' }
  | { type: 'note'; text: string }
  | { type: 'views'; views: Record<string, ViewQuery> }
  | { type: 'ack' }
  | { type: 'ask'; id: number; ask: Ask }
  | { type: 'answer'; id: number; value?: unknown; error?: WireError }

/** The worker → the page. */
export type FromEngine =
  | { type: 'update'; summary: Summary; views: Record<string, ViewData> }
  | { type: 'answer'; id: number; value?: unknown; error?: WireError }
  | { type: 'remote'; id: number; call: { kind: 'resolve'; remote: number } | { kind: 'onError'; error: WireError } }

/** What answers `onError` over the wire: new headers/params (functions named by number) or nothing, to stop. */
export type WireOnErrorResult = { headers?: WireRecord; params?: WireRecord } | null

/** Either end of the conversation: a Worker, the worker's own scope, or a MessagePort (tests). */
export interface Port {
  postMessage(message: unknown): void
  onmessage: ((event: { data: unknown }) => void) | null
}
