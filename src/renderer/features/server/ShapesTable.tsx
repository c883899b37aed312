import { useEffect, useState } from 'react'
import { formatBytes } from '../../../shared/format-bytes'
import type { ServerState, ShapeQuery, ShapeSortKey, ShapeState } from '../../../shared/protocol/debug-shapes'
import { ErrorBox } from '../../components/ErrorBox'
import { useVisibleRange } from '../../components/use-visible-range'
import { useCallMutation } from '../../hooks'
import { ago, windowStart } from './server-view'

/** What the table shows: the order, the filter, and where the window of fetched rows starts. */
export interface ShapesView {
  sort: ShapeQuery['sort']
  filter: string
  start: number
}

const ROW_HEIGHT = 28
const FILTER_DELAY_MS = 250

interface Column {
  label: string
  width: string
  sort?: ShapeSortKey
  title?: string
  cell: (shape: ShapeState, now: number) => string
}

const COLUMNS: Column[] = [
  {
    label: 'Rank',
    width: '76px',
    sort: 'last_used',
    title: 'Place in the order the limits drop shapes in: 1 is the least recently used, the next to go',
    cell: (shape) => String(shape.eviction_rank)
  },
  { label: 'Handle', width: '230px', sort: 'handle', cell: (shape) => shape.handle },
  { label: 'Table', width: '150px', sort: 'table', cell: (shape) => shape.definition.table },
  { label: 'Where', width: '260px', cell: (shape) => shape.definition.where ?? '' },
  { label: 'Phase', width: '80px', sort: 'phase', cell: (shape) => shape.phase },
  { label: 'Disk', width: '90px', sort: 'disk_bytes', cell: (shape) => formatBytes(shape.disk_bytes) },
  { label: 'Changes', width: '80px', sort: 'log_entries', cell: (shape) => String(shape.log_entries) },
  { label: 'Latest offset', width: '170px', cell: (shape) => shape.latest_offset },
  { label: 'Long-polls', width: '90px', sort: 'long_polls', cell: (shape) => String(shape.long_polls) },
  { label: 'SSE', width: '60px', sort: 'sse_streams', cell: (shape) => String(shape.sse_streams) },
  { label: 'Last change', width: '110px', sort: 'last_change', cell: (shape, now) => ago(shape.last_change_at, now) },
  { label: 'Last used', width: '110px', cell: (shape, now) => ago(shape.last_used_at, now) }
]
const TEMPLATE = `${COLUMNS.map((column) => column.width).join(' ')} 70px`

/**
 * Every shape of the server, virtualised: only a window of rows around what is on screen is fetched (sorted and
 * filtered by main), so 100,000 shapes scroll like 100. A row opens its definition; a shape, or all of them, can be
 * dropped (their clients refetch).
 */
export function ShapesTable({
  state,
  view,
  onView
}: {
  state: ServerState
  view: ShapesView
  onView: (view: ShapesView) => void
}) {
  const [selected, setSelected] = useState<string | null>(null)
  const range = useVisibleRange(state.matched, ROW_HEIGHT, 10)
  const wanted = windowStart(range.start)
  useEffect(() => {
    if (wanted !== view.start) onView({ ...view, start: wanted })
  }, [wanted, view, onView])
  const toggle = (key: ShapeSortKey) =>
    onView({
      ...view,
      start: 0,
      sort: {
        key,
        direction: view.sort.key === key && view.sort.direction === 'ascending' ? 'descending' : 'ascending'
      }
    })
  const now = Date.now()
  const rowAt = (index: number): ShapeState | undefined => state.shapes[index - state.offset]
  const chosen = state.shapes.find((shape) => shape.handle === selected) ?? null
  return (
    <section className="panel" aria-label="Shapes">
      <h2>Shapes</h2>
      <ShapesToolbar view={view} onView={onView} state={state} />
      <div className="server-grid" ref={range.scroller} role="table" aria-label="Shapes" data-testid="server-shapes">
        <div className="server-grid-head" role="row" style={{ gridTemplateColumns: TEMPLATE }}>
          {COLUMNS.map((column) => {
            const active = column.sort !== undefined && view.sort.key === column.sort
            return (
              <div
                key={column.label}
                role="columnheader"
                title={column.title}
                aria-sort={active ? view.sort.direction : undefined}
              >
                {column.sort ? (
                  <button
                    type="button"
                    className="link"
                    onClick={() => toggle(column.sort as ShapeSortKey)}
                    data-testid={`server-sort-${column.label.toLowerCase().replaceAll(' ', '-')}`}
                  >
                    {column.label}
                    {active ? (view.sort.direction === 'ascending' ? ' ▲' : ' ▼') : ''}
                  </button>
                ) : (
                  column.label
                )}
              </div>
            )
          })}
          <div role="columnheader" />
        </div>
        <div style={{ height: range.totalSize, position: 'relative' }}>
          {indexes(range).map((index) => {
            const shape = rowAt(index)
            return (
              <ShapeRow
                key={shape?.handle ?? `pending-${index}`}
                shape={shape}
                now={now}
                top={range.offsetOf(index)}
                selected={shape !== undefined && shape.handle === selected}
                onSelect={setSelected}
              />
            )
          })}
        </div>
      </div>
      {chosen && <ShapeDetails shape={chosen} />}
    </section>
  )
}

function ShapesToolbar({
  view,
  onView,
  state
}: {
  view: ShapesView
  onView: (view: ShapesView) => void
  state: ServerState
}) {
  const [filter, setFilter] = useState(view.filter)
  const [confirming, setConfirming] = useState(false)
  const dropAll = useCallMutation('server.dropAllShapes', ['server.state'])
  useEffect(() => {
    if (filter === view.filter) return
    const timer = setTimeout(() => onView({ ...view, filter, start: 0 }), FILTER_DELAY_MS)
    return () => clearTimeout(timer)
  }, [filter, view, onView])
  return (
    <div className="toolbar server-toolbar">
      <input
        type="search"
        placeholder="Filter by handle, table, where or phase"
        value={filter}
        onChange={(event) => setFilter(event.target.value)}
        maxLength={500}
        data-testid="server-filter"
      />
      <span className="count" data-testid="server-matched">
        {state.matched === state.server.shapes
          ? `${state.matched.toLocaleString('en')} shapes`
          : `${state.matched.toLocaleString('en')} of ${state.server.shapes.toLocaleString('en')} shapes`}
      </span>
      {confirming ? (
        <span className="server-confirm" role="group" aria-label="Confirm dropping every shape">
          Drop all {state.server.shapes.toLocaleString('en')} shapes? Their clients refetch them.{' '}
          <button
            type="button"
            className="danger"
            data-testid="server-drop-all-confirm"
            disabled={dropAll.isPending}
            onClick={() => dropAll.mutate({}, { onSettled: () => setConfirming(false) })}
          >
            Drop all
          </button>{' '}
          <button type="button" className="secondary" onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </span>
      ) : (
        <button
          type="button"
          className="secondary"
          disabled={state.server.shapes === 0}
          onClick={() => setConfirming(true)}
          data-testid="server-drop-all"
        >
          Drop all shapes…
        </button>
      )}
      {dropAll.data && <span data-testid="server-dropped-all">{dropAll.data.dropped} dropped</span>}
      <ErrorBox error={dropAll.error} />
    </div>
  )
}

function ShapeRow({
  shape,
  now,
  top,
  selected,
  onSelect
}: {
  shape: ShapeState | undefined
  now: number
  top: number
  selected: boolean
  onSelect: (handle: string) => void
}) {
  const drop = useCallMutation('server.dropShape', ['server.state'])
  const style = { gridTemplateColumns: TEMPLATE, transform: `translateY(${top}px)`, height: ROW_HEIGHT }
  if (!shape)
    return (
      <div role="row" className="server-row pending" style={style}>
        <div role="cell">…</div>
      </div>
    )
  return (
    <div
      role="row"
      className={`server-row ${selected ? 'selected' : ''} phase-${shape.phase}`}
      style={style}
      data-testid={`server-shape-${shape.handle}`}
      onClick={() => onSelect(shape.handle)}
    >
      {COLUMNS.map((column) => (
        <div key={column.label} role="cell" data-column={column.label} title={column.cell(shape, now)}>
          {column.cell(shape, now)}
        </div>
      ))}
      <div role="cell">
        <button
          type="button"
          className="link"
          disabled={drop.isPending}
          onClick={(event) => {
            event.stopPropagation()
            drop.mutate({ handle: shape.handle })
          }}
          data-testid="server-drop-shape"
        >
          Drop
        </button>
      </div>
    </div>
  )
}

/** The selected shape's whole definition and files. */
function ShapeDetails({ shape }: { shape: ShapeState }) {
  const { definition } = shape
  return (
    <dl className="facts server-details" data-testid="server-shape-details">
      <dt>Handle</dt>
      <dd className="mono">{shape.handle}</dd>
      <dt>Table</dt>
      <dd className="mono">{definition.table}</dd>
      <dt>Where</dt>
      <dd className="mono">{definition.where ?? '(all rows)'}</dd>
      {Object.keys(definition.params).length > 0 && (
        <>
          <dt>Params</dt>
          <dd className="mono">
            {Object.entries(definition.params)
              .map(([name, value]) => `$${name} = ${value}`)
              .join(', ')}
          </dd>
        </>
      )}
      <dt>Columns</dt>
      <dd className="mono">{definition.columns?.join(', ') ?? '(all)'}</dd>
      <dt>Replica / log</dt>
      <dd>
        {definition.replica} / {definition.log}
      </dd>
      {definition.subquery_dependencies.map((dependency, index) => (
        <SubqueryFact key={index} index={index} dependency={dependency} />
      ))}
      <dt>Snapshot</dt>
      <dd>
        {shape.phase}, {shape.snapshot_chunks} chunk{shape.snapshot_chunks === 1 ? '' : 's'},{' '}
        {formatBytes(shape.snapshot_bytes)}
        {shape.failure && <span className="warn"> — {shape.failure}</span>}
      </dd>
      <dt>Log</dt>
      <dd>
        {shape.log_entries} changes, {formatBytes(shape.log_bytes)}, latest offset <code>{shape.latest_offset}</code>
      </dd>
      <dt>Created</dt>
      <dd>{new Date(shape.created_at).toLocaleString()}</dd>
    </dl>
  )
}

function SubqueryFact({
  index,
  dependency
}: {
  index: number
  dependency: ShapeState['definition']['subquery_dependencies'][number]
}) {
  return (
    <>
      <dt>Subquery {index + 1}</dt>
      <dd className="mono">
        SELECT {dependency.columns.join(', ')} FROM {dependency.table}
        {dependency.where ? ` WHERE ${dependency.where}` : ''}
      </dd>
    </>
  )
}

/** The list indexes the range draws. */
function indexes(range: { start: number; end: number }): number[] {
  return Array.from({ length: range.end - range.start }, (_, offset) => range.start + offset)
}
