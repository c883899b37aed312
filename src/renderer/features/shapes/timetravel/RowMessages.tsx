import { useState } from 'react'
import type { RowOrigin, ShapeRow } from '../../../../shared/contract/timetravel'
import { ErrorBox } from '../../../components/ErrorBox'
import { useCall } from '../../../hooks'
import { originText } from '../../../../shared/timetravel-text'

/** One message of the log, whole, read when asked for. */
function MessageBody({ logId, index }: { logId: string; index: number }) {
  const read = useCall('timetravel.messages', { logId, from: index, count: 1 }, { staleTime: Infinity })
  if (read.error) return <ErrorBox error={read.error} />
  const message = read.data?.entries[0]?.message
  return (
    <pre className="message-body" data-testid="message-body">
      {message ? JSON.stringify(message, null, 2) : 'Reading…'}
    </pre>
  )
}

function OriginLine({ logId, origin, onJump }: { logId: string; origin: RowOrigin; onJump(count: number): void }) {
  const [open, setOpen] = useState(false)
  return (
    <li data-testid="row-origin">
      <button type="button" className="link" onClick={() => setOpen(!open)} aria-expanded={open}>
        #{origin.index + 1} {originText(origin)}
      </button>{' '}
      <button type="button" className="secondary small" onClick={() => onJump(origin.index + 1)}>
        go there
      </button>
      {open && <MessageBody logId={logId} index={origin.index} />}
    </li>
  )
}

/** A row of the shape at a point, with the messages that made it what it is there (each opened whole on a click). */
export function RowMessages({
  logId,
  row,
  onJump,
  onClose
}: {
  logId: string
  row: ShapeRow
  onJump(count: number): void
  onClose(): void
}) {
  const hidden = row.originCount - row.origins.length
  return (
    <section className="row-messages" aria-label="Messages of this row" data-testid="row-messages">
      <div className="toolbar">
        <strong className="mono">{row.key}</strong>
        <button type="button" className="secondary small" onClick={onClose}>
          Close
        </button>
      </div>
      <p className="muted">
        Made by {row.originCount} message{row.originCount === 1 ? '' : 's'} of the log, oldest first
        {hidden > 0 && ` (the first and the latest ${row.origins.length - 1}; ${hidden} between not listed)`}:
      </p>
      <ol className="origins">
        {row.origins.map((origin) => (
          <OriginLine key={origin.index} logId={logId} origin={origin} onJump={onJump} />
        ))}
      </ol>
    </section>
  )
}
