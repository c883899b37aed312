import type { ReactNode } from 'react'
import { rowAt, type useVisibleRange } from './use-view'

/**
 * A long table drawn a window at a time: the rows in view (sent by the worker for `range`) between two spacers that
 * stand for the rest, so the scroll bar is the whole list's. Rows not arrived yet are blank lines of the same height.
 */
export function VirtualTable<T>({
  testId,
  range,
  view,
  rowHeight,
  head,
  columns,
  render
}: {
  testId: string
  range: ReturnType<typeof useVisibleRange>
  view: { start: number; rows: T[] } | undefined
  rowHeight: number
  head: ReactNode
  columns: number
  render(row: T, index: number): ReactNode
}) {
  const lines: ReactNode[] = []
  for (let index = range.start; index < range.end; index += 1) {
    const row = rowAt(view, index)
    lines.push(
      row === undefined ? (
        <tr key={`blank-${index}`} className="blank" style={{ height: rowHeight }}>
          <td colSpan={columns} />
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
          <thead>{head}</thead>
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
