import { useState } from 'react'
import type { LogEntry, ShapeLogInfo } from '../../../../shared/contract/timetravel'
import { ErrorBox } from '../../../components/ErrorBox'
import { api, type ApiError } from '../../../api'
import { entryText } from './entry-text'

/**
 * The log as a slider: its value is how many messages are applied (0: before the first). Arrows step one message; an
 * offset typed in jumps to the last message at or before it.
 */
export function Scrubber({
  info,
  count,
  last,
  offset,
  pending,
  onCount
}: {
  info: ShapeLogInfo
  count: number
  /** The message at the point answered last, and its position. */
  last: LogEntry | null
  offset: string
  pending: boolean
  onCount(count: number): void
}) {
  const [typed, setTyped] = useState('')
  const [error, setError] = useState<ApiError | null>(null)
  const go = async () => {
    setError(null)
    try {
      const at = await api.call('timetravel.rowsAt', { logId: info.logId, at: { offset: typed.trim() }, limit: 1 })
      onCount(at.count)
    } catch (failure) {
      setError(failure as ApiError)
    }
  }
  const step = (by: number) => onCount(Math.min(info.total, Math.max(0, count + by)))
  return (
    <div className="scrubber">
      <div className="toolbar">
        <button type="button" className="secondary small" aria-label="previous message" onClick={() => step(-1)}>
          ◀
        </button>
        <input
          type="range"
          aria-label="log position"
          min={0}
          max={info.total}
          step={1}
          value={count}
          onChange={(event) => onCount(Number(event.target.value))}
        />
        <button type="button" className="secondary small" aria-label="next message" onClick={() => step(1)}>
          ▶
        </button>
        <form
          className="inline-form"
          onSubmit={(event) => {
            event.preventDefault()
            void go()
          }}
        >
          <input
            aria-label="go to offset"
            className="mono narrow-offset"
            placeholder="offset, e.g. 0_0"
            value={typed}
            onChange={(event) => setTyped(event.target.value)}
          />
          <button type="submit" className="secondary small" disabled={!typed.trim()}>
            Go
          </button>
        </form>
      </div>
      <p className="scrub-point" data-testid="scrub-point" aria-busy={pending}>
        {count === 0
          ? `before the first message (offset -1) · ${info.total} messages`
          : `after message ${count} of ${info.total}`}
        {count > 0 && last && (
          <>
            {' · '}
            <span className="mono">{entryText(last)}</span> at <span className="mono">{offset}</span>
            {last.txids.length > 0 && ` · txid ${last.txids.join(',')}`}
          </>
        )}
        {pending && <span className="muted"> · replaying…</span>}
      </p>
      <ErrorBox error={error} />
    </div>
  )
}
