import { memo, useState } from 'react'
import { now } from '../../../shared/shape-client'
import { RowWhy } from './RowWhy'
import type { RowsView as RowsViewData } from './engine/protocol'
import { FLASH_MS, type WorkbenchSession } from './session'
import { useVisibleRange } from '../../components/use-visible-range'
import { rowAt, useSessionView } from './use-view'

const ROW_HEIGHT = 26
const COLUMN_WIDTH = 170
const TAGS_WIDTH = 90

function ChangeCounts({ session }: { session: WorkbenchSession }) {
  const counts = session.summary?.counts
  return (
    <span data-testid="change-counts">
      {counts?.insert ?? 0} inserts, {counts?.update ?? 0} updates, {counts?.delete ?? 0} deletes applied
      {(counts?.reset ?? 0) > 0 && `, ${counts?.reset} must-refetch`}
    </span>
  )
}

type Row = RowsViewData['rows'][number]

interface ShapeRowProps {
  row: Row
  top: number
  template: string
  tagged: boolean
  selected: boolean
  flashing: boolean
  onSelect(key: string): void
}

const sameRow = (a: Row, b: Row) =>
  a.key === b.key &&
  a.mark?.at === b.mark?.at &&
  a.inBy === b.inBy &&
  a.tags === b.tags &&
  a.cells.length === b.cells.length &&
  a.cells.every((cell, index) => cell === b.cells[index])

/** One row of the table; drawn again only when something it shows changed (the window is sent anew each update). */
const ShapeRow = memo(
  function ShapeRow({ row, top, template, tagged, selected, flashing, onSelect }: ShapeRowProps) {
    return (
      <div
        role="row"
        data-key={row.key}
        className={`virtual-row ${flashing && row.mark ? `flash-${row.mark.kind}` : ''} ${selected ? 'selected' : ''}`}
        style={{ gridTemplateColumns: template, transform: `translateY(${top}px)`, height: ROW_HEIGHT }}
        onClick={() => onSelect(row.key)}
      >
        {tagged && (
          <div role="cell" className="in-by" data-testid="in-by" title={row.tags}>
            {row.inBy}
          </div>
        )}
        {row.cells.map((cell, index) => (
          <div key={index} role="cell" className={cell === null ? 'null' : ''} title={cell ?? undefined}>
            {cell ?? 'NULL'}
          </div>
        ))}
      </div>
    )
  },
  (before, after) =>
    sameRow(before.row, after.row) &&
    before.top === after.top &&
    before.template === after.template &&
    before.tagged === after.tagged &&
    before.selected === after.selected &&
    before.flashing === after.flashing &&
    before.onSelect === after.onSelect
)

/**
 * The materialised shape as a virtualised table: the rows live in the workbench's worker, which sends the window in
 * view. Rows that just changed flash. A subquery shape's rows also show which disjuncts of the where hold them
 * ("in by"); a click on a row explains it.
 */
export function RowsView({ session }: { session: WorkbenchSession }) {
  const [selected, setSelected] = useState<string | null>(null)
  const total = session.summary?.rowCount ?? 0
  const range = useVisibleRange(total, ROW_HEIGHT, 20)
  const view = useSessionView(session, { kind: 'rows', start: range.start, end: range.end })
  const columns = view?.columns ?? []
  const tagged = view?.tagged ?? false
  const at = now()
  // One fixed width for every column: header and each absolutely placed row then line up whatever their contents.
  const template = `${tagged ? `${TAGS_WIDTH}px ` : ''}repeat(${Math.max(columns.length, 1)}, ${COLUMN_WIDTH}px)`
  const rate = session.summary?.rate ?? 0
  return (
    <div className="rows-view">
      <p className="count">
        <span data-testid="row-count">
          {total} row{total === 1 ? '' : 's'}
        </span>
        {' · '}
        <ChangeCounts session={session} />
        {rate > 0 && <span className="muted"> · {Math.round(rate).toLocaleString('en')} changes/s</span>}
      </p>
      <div className="virtual-grid" ref={range.scroller} role="table" aria-label="Shape rows">
        <div className="virtual-head" role="row" style={{ gridTemplateColumns: template }}>
          {tagged && (
            <div
              role="columnheader"
              title="The disjuncts of the where (OR arms) that hold the row, from its tags and active_conditions"
            >
              in by
            </div>
          )}
          {columns.map((column) => (
            <div key={column.name} role="columnheader" title={column.type ?? undefined}>
              {column.name}
              {column.type && <small> {column.type}</small>}
            </div>
          ))}
        </div>
        <div style={{ height: range.totalSize, position: 'relative' }}>
          {Array.from({ length: range.end - range.start }, (_, offset) => {
            const index = range.start + offset
            const row = rowAt(view, index)
            if (!row) return null
            return (
              <ShapeRow
                key={`${row.key}@${row.mark?.at ?? 0}`}
                row={row}
                top={range.offsetOf(index)}
                template={template}
                tagged={tagged}
                selected={row.key === selected}
                flashing={row.mark !== null && at - row.mark.at < FLASH_MS}
                onSelect={setSelected}
              />
            )
          })}
        </div>
      </div>
      {selected && <RowWhy key={selected} session={session} rowKey={selected} onClose={() => setSelected(null)} />}
    </div>
  )
}
