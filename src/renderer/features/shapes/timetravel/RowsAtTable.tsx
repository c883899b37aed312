import type { RowsAt, ShapeRow } from '../../../../shared/contract/timetravel'
import type { useVisibleRange } from '../../../components/use-visible-range'
import { originText } from '../../../../shared/timetravel-text'
import { cellText } from './entry-text'

export const ROW_HEIGHT = 26
const COLUMN_WIDTH = 160
const MADE_BY_WIDTH = 260

/** The rows of the window answered, by their place among all the rows. */
function rowOf(answer: RowsAt | undefined, index: number): ShapeRow | undefined {
  return answer ? answer.rows[index - answer.start] : undefined
}

/**
 * The shape at the scrubber's point as a virtualised table: main sends the window in view (`timetravel.rowsAt` with
 * start and limit), the page draws it between spacers. Each row says which messages made it; rows the point's own
 * message made are marked; a click opens its messages.
 */
export function RowsAtTable({
  range,
  answer,
  count,
  selected,
  onSelect
}: {
  range: ReturnType<typeof useVisibleRange>
  answer: RowsAt | undefined
  /** The point the table is for: rows whose last message is its message are marked. */
  count: number
  selected: string | null
  onSelect(row: ShapeRow): void
}) {
  const first = answer?.rows[0]?.value ?? {}
  const columns = Object.keys(first)
  const template = `${MADE_BY_WIDTH}px repeat(${Math.max(columns.length, 1)}, ${COLUMN_WIDTH}px)`
  const lines = []
  for (let index = range.start; index < range.end; index += 1) {
    const row = rowOf(answer, index)
    if (!row) continue
    const latest = row.origins.at(-1)
    const here = latest?.index === count - 1
    lines.push(
      <div
        key={row.key}
        role="row"
        data-key={row.key}
        data-here={here || undefined}
        className={`virtual-row ${here ? 'made-here' : ''} ${row.key === selected ? 'selected' : ''}`}
        style={{
          gridTemplateColumns: template,
          transform: `translateY(${range.offsetOf(index)}px)`,
          height: ROW_HEIGHT
        }}
        onClick={() => onSelect(row)}
      >
        <div role="cell" className="made-by" title={row.origins.map(originText).join('\n')}>
          {row.originCount} message{row.originCount === 1 ? '' : 's'}: {latest ? originText(latest) : ''}
        </div>
        {columns.map((column) => (
          <div key={column} role="cell" className={row.value[column] === null ? 'null' : ''}>
            {cellText(row.value[column])}
          </div>
        ))}
      </div>
    )
  }
  return (
    <div className="virtual-grid" ref={range.scroller} role="table" aria-label="Rows at this point">
      <div className="virtual-head" role="row" style={{ gridTemplateColumns: template }}>
        <div role="columnheader" title="The messages that made the row what it is here (the latest shown)">
          made by
        </div>
        {columns.map((column) => (
          <div key={column} role="columnheader">
            {column}
          </div>
        ))}
      </div>
      <div style={{ height: range.totalSize, position: 'relative' }}>{lines}</div>
    </div>
  )
}
