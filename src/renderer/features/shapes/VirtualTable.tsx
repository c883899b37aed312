import type { ReactNode } from 'react'
import type { useVisibleRange } from '../../components/use-visible-range'
import { rowAt } from './use-view'

/**
 * A long table drawn a window at a time: the rows in view (sent by the worker for `range`) between two spacers that
 * stand for the rest, so the scroll bar is the whole list's. Rows not arrived yet are blank lines of the same height.
 */
export function VirtualTable<T>({
  testId,
  range,
  view,
  rowHeight,
  columns,
  render
}: {
  testId: string
  range: ReturnType<typeof useVisibleRange>
  view: { start: number; rows: T[] } | undefined
  rowHeight: number
  /** The header cells. */
  columns: string[]
  render(row: T, index: number): ReactNode
}) {
  const lines: ReactNode[] = []
  for (let index = range.start; index < range.end; index += 1) {
    const row = rowAt(view, index)
    lines.push(
      row === undefined ? (
        <tr key={`blank-${index}`} className="blank" style={{ height: rowHeight }}>
          <td colSpan={columns.length} />
        </tr>
      ) : (
        render(row, index)
      )
    )
  }
  return (
    <div className="scroll virtual-table" ref={range.scroller}>
      <div style={{ paddingTop: range.before, paddingBottom: range.after }}>
        <table
          className="grid compact fixed-rows"
          data-testid={testId}
          style={{ ['--row-height' as string]: `${rowHeight}px` }}
        >
          <thead>
            <tr>
              {columns.map((column) => (
                <th key={column}>{column}</th>
              ))}
            </tr>
          </thead>
          <tbody>{lines}</tbody>
        </table>
      </div>
    </div>
  )
}

/** A search field for a long list: what it holds narrows the list (case-insensitive), in the worker. */
export function SearchBox({ label, value, onChange }: { label: string; value: string; onChange(value: string): void }) {
  return (
    <input
      type="search"
      className="search"
      aria-label={label}
      placeholder="search…"
      value={value}
      onChange={(event) => onChange(event.target.value)}
    />
  )
}

/** How many entries the filter and search hold, of how many kept. */
export function ShownCount({ testId, view }: { testId: string; view: { matched: number; total: number } | undefined }) {
  return (
    <span className="count" data-testid={testId}>
      {view ? `${view.matched} shown` : ''}
      {view && view.matched !== view.total ? ` of ${view.total}` : ''}
    </span>
  )
}
