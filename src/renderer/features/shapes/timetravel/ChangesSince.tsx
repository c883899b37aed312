import type { ShapeDiff } from '../../../../shared/contract/timetravel'
import { originText } from '../../../../shared/timetravel-text'
import { ErrorBox } from '../../../components/ErrorBox'
import { cellText } from './entry-text'
import { useLatestCall } from './use-latest-call'

/** Changes listed at most (the count says how many there are). */
const LISTED = 500

function ChangeLine({ change }: { change: ShapeDiff['changes'][number] }) {
  const values =
    change.kind === 'changed'
      ? change.columns
          .map((column) => `${column}: ${cellText(change.before?.[column])} → ${cellText(change.after?.[column])}`)
          .join(', ')
      : Object.entries(change.before ?? change.after ?? {})
          .map(([column, value]) => `${column}=${cellText(value)}`)
          .join(' ')
  return (
    <tr data-testid="row-change" data-kind={change.kind}>
      <td>
        <span className="badge">{change.kind}</span>
      </td>
      <td className="mono">{change.key}</td>
      <td>{values}</td>
      <td className="muted">{change.messages.map(originText).join(', ')}</td>
    </tr>
  )
}

/** What changed between the pinned point and the scrubber's: rows added, removed and changed, with their messages. */
export function ChangesSince({ logId, from, to }: { logId: string; from: number; to: number }) {
  const diff = useLatestCall('timetravel.diff', { logId, from: { count: from }, to: { count: to }, limit: LISTED })
  const answer = diff.data
  return (
    <section className="changes-since" aria-label="Changes since the pin" data-testid="changes-since">
      <ErrorBox error={diff.error} />
      {answer && (
        <>
          <p className="count">
            From {answer.from} to {answer.to} (messages {Math.min(answer.fromCount, answer.toCount) + 1}…
            {Math.max(answer.fromCount, answer.toCount)}): {answer.changeCount} row
            {answer.changeCount === 1 ? '' : 's'} changed
            {answer.changeCount > answer.changes.length && `, the first ${answer.changes.length} listed`}
            {diff.pending && <span className="muted"> · replaying…</span>}
          </p>
          {answer.changes.length > 0 && (
            <div className="scroll">
              <table className="grid compact">
                <tbody>
                  {answer.changes.map((change) => (
                    <ChangeLine key={change.key} change={change} />
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </section>
  )
}
