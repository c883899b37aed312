import { useState } from 'react'
import type { ShapeLogInfo, ShapeRow } from '../../../../shared/contract/timetravel'
import { ErrorBox } from '../../../components/ErrorBox'
import { ChangesSince } from './ChangesSince'
import { useVisibleRange } from '../../../components/use-visible-range'
import { RowMessages } from './RowMessages'
import { ROW_HEIGHT, RowsAtTable } from './RowsAtTable'
import { Scrubber } from './Scrubber'
import { useLatestCall } from './use-latest-call'

/**
 * Time travel through an opened log: the scrubber picks a point, and the rows view shows the shape there, a window
 * at a time, each row linked to the messages that made it.
 */
export function ShapeAtView({ info }: { info: ShapeLogInfo }) {
  const [count, setCount] = useState(info.total)
  const [selected, setSelected] = useState<ShapeRow | null>(null)
  const [rowCount, setRowCount] = useState(0)
  /** A point to compare the scrubber's with. */
  const [pinned, setPinned] = useState<number | null>(null)
  const range = useVisibleRange(rowCount, ROW_HEIGHT, 20)
  const rows = useLatestCall('timetravel.rowsAt', {
    logId: info.logId,
    at: { count },
    start: range.start,
    // an empty window still answers how many rows there are
    limit: Math.max(1, range.end - range.start)
  })
  const answer = rows.data
  if (answer && answer.rowCount !== rowCount) setRowCount(answer.rowCount)
  const current = selected && answer?.rows.find((row) => row.key === selected.key)
  return (
    <div className="shape-at">
      <Scrubber
        info={info}
        count={count}
        last={answer?.last ?? null}
        offset={answer?.offset ?? ''}
        pending={rows.pending}
        onCount={setCount}
      />
      <div className="toolbar">
        <button type="button" className="secondary small" onClick={() => setPinned(count)}>
          Pin this point
        </button>
        {pinned !== null && (
          <>
            <span className="muted" data-testid="pinned">
              pinned after message {pinned}: the changes from there to the scrubber&apos;s point
            </span>
            <button type="button" className="secondary small" onClick={() => setPinned(null)}>
              Unpin
            </button>
          </>
        )}
      </div>
      {pinned !== null && <ChangesSince logId={info.logId} from={pinned} to={count} />}
      <ErrorBox error={rows.error} />
      {answer && answer.uncertain.length > 0 && (
        <p className="warn" data-testid="uncertain">
          {answer.uncertain.length} message(s) without a position of their own may lie on either side of this point
          (after {answer.uncertain[0]?.after}): not applied here.
        </p>
      )}
      <p className="count" data-testid="rows-at-count">
        {answer ? `${answer.rowCount} row${answer.rowCount === 1 ? '' : 's'} at offset ${answer.offset}` : ''}
      </p>
      <RowsAtTable
        range={range}
        answer={answer}
        count={answer?.count ?? count}
        selected={selected?.key ?? null}
        onSelect={setSelected}
      />
      {selected && (
        <RowMessages
          key={`${selected.key}@${answer?.count ?? count}`}
          logId={info.logId}
          row={current ?? selected}
          onJump={setCount}
          onClose={() => setSelected(null)}
        />
      )}
    </div>
  )
}
