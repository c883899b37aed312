import { useRef, useState } from 'react'
import { useVirtualizer } from '@tanstack/react-virtual'
import { inBySummary } from './membership-view'
import { RowWhy } from './RowWhy'
import { FLASH_MS, type WorkbenchSession } from './session'

const ROW_HEIGHT = 26
const COLUMN_WIDTH = 170
const TAGS_WIDTH = 90

/**
 * The materialised shape as a virtualised table; rows that just changed flash. A subquery shape's rows also show which
 * disjuncts of the where hold them ("in by"); a click on a row explains it.
 */
export function RowsView({ session }: { session: WorkbenchSession }) {
  const scroller = useRef<HTMLDivElement>(null)
  const [selected, setSelected] = useState<string | null>(null)
  const rows = [...session.shape.rows.entries()]
  const schema = session.shape.stream.current.schema
  const columns = schema ? Object.keys(schema) : [...new Set(rows.slice(0, 50).flatMap(([, row]) => Object.keys(row)))]
  const tagged = rows.slice(0, 50).some(([key]) => session.shape.membership(key) !== null)
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 20
  })
  const now = performance.now()
  // One fixed width for every column: header and each absolutely placed row then line up whatever their contents.
  const template = `${tagged ? `${TAGS_WIDTH}px ` : ''}repeat(${Math.max(columns.length, 1)}, ${COLUMN_WIDTH}px)`
  return (
    <div className="rows-view">
      <p className="count">
        <span data-testid="row-count">
          {rows.length} row{rows.length === 1 ? '' : 's'}
        </span>
        {' · '}
        <span data-testid="change-counts">
          {session.counts.insert} inserts, {session.counts.update} updates, {session.counts.delete} deletes applied
          {session.counts.reset > 0 && `, ${session.counts.reset} must-refetch`}
        </span>
      </p>
      <div className="virtual-grid" ref={scroller} role="table" aria-label="Shape rows">
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
            <div key={column} role="columnheader" title={schema?.[column]?.type}>
              {column}
              {schema?.[column]?.type && <small> {schema[column].type}</small>}
            </div>
          ))}
        </div>
        <div style={{ height: virtualizer.getTotalSize(), position: 'relative' }}>
          {virtualizer.getVirtualItems().map((item) => {
            const [key, row] = rows[item.index] ?? ['', {}]
            const flash = session.flashes.get(key)
            const flashing = flash && now - flash.at < FLASH_MS ? `flash-${flash.kind}` : ''
            return (
              <div
                key={`${key}@${flash?.at ?? 0}`}
                role="row"
                data-key={key}
                className={`virtual-row ${flashing} ${key === selected ? 'selected' : ''}`}
                style={{ gridTemplateColumns: template, transform: `translateY(${item.start}px)`, height: ROW_HEIGHT }}
                onClick={() => setSelected(key)}
              >
                {tagged && (
                  <div
                    role="cell"
                    className="in-by"
                    data-testid="in-by"
                    title={session.shape
                      .membership(key)
                      ?.tags.map((slots) => slots.join('/'))
                      .join('\n')}
                  >
                    {inBySummary(session.shape.membership(key))}
                  </div>
                )}
                {columns.map((column) => (
                  <div
                    key={column}
                    role="cell"
                    className={row[column] === null ? 'null' : ''}
                    title={row[column] ?? undefined}
                  >
                    {row[column] ?? 'NULL'}
                  </div>
                ))}
              </div>
            )
          })}
        </div>
      </div>
      {selected && <RowWhy key={selected} session={session} rowKey={selected} onClose={() => setSelected(null)} />}
    </div>
  )
}
