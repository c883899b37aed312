import { useState } from 'react'
import type { LogSourceInput, TxidReport, TxidShape } from '../../../../shared/contract/timetravel'
import { ErrorBox } from '../../../components/ErrorBox'
import { api } from '../../../api'
import { entryText } from './entry-text'
import { useTask } from './use-task'

function ShapeTrace({ shape }: { shape: TxidShape }) {
  return (
    <div className="txid-shape" data-testid="txid-shape" data-verdict={shape.verdict} data-reason={shape.reason}>
      <p>
        <span className={`badge ${shape.verdict === 'absent' ? 'error' : 'ok'}`}>{shape.verdict}</span>{' '}
        {shape.reason && <span className="badge">{shape.reason}</span>}{' '}
        <code>{shape.url ?? shape.definition.table}</code> · handle <code>{shape.handle ?? '?'}</code>
      </p>
      {shape.carriers.length > 0 && (
        <ul>
          {shape.carriers.map((entry) => (
            <li key={entry.index} data-testid="txid-carrier">
              message #{entry.index + 1}: <span className="mono">{entryText(entry)}</span> at{' '}
              <span className="mono">{entry.offset}</span>
            </li>
          ))}
        </ul>
      )}
      {shape.cover && (
        <p data-testid="txid-cover">
          covered by {shape.cover.initial ? "the shape's initial snapshot" : "a move-in query's snapshot"} (xmin{' '}
          {shape.cover.xmin}, xmax {shape.cover.xmax}, xip [{shape.cover.xipList.join(', ')}]) ending at{' '}
          <span className="mono">{shape.cover.entry.offset}</span>
        </p>
      )}
      <ul className="explanation">
        {shape.explanation.map((line, index) => (
          <li key={index}>{line}</li>
        ))}
      </ul>
    </div>
  )
}

/**
 * The txid tracer: a transaction id (what `pg_current_xact_id()` returned to the write, as `awaitTxId` waits for) →
 * the messages carrying it or the snapshot covering it, in this shape (and, asked, every shape of the local server),
 * or why none does.
 */
export function TxidPanel({ source, local }: { source: LogSourceInput | null; local: boolean }) {
  const [txid, setTxid] = useState('')
  const [allLocal, setAllLocal] = useState(false)
  const { result: report, error, busy, run } = useTask<TxidReport>()
  const trace = () =>
    run(() =>
      api.call('timetravel.txid', { txid: txid.trim(), shapes: source ? [source] : [], allLocal, databaseUrl: null })
    )
  return (
    <section className="panel txid-panel" aria-label="Trace a txid">
      <h3>Did my write reach the shape?</h3>
      <form
        className="toolbar"
        onSubmit={(event) => {
          event.preventDefault()
          void trace()
        }}
      >
        <input
          aria-label="txid"
          className="mono"
          inputMode="numeric"
          placeholder="txid, as pg_current_xact_id() returned it"
          value={txid}
          onChange={(event) => setTxid(event.target.value)}
        />
        {local && (
          <label>
            <input type="checkbox" checked={allLocal} onChange={(event) => setAllLocal(event.target.checked)} /> every
            shape of the local server
          </label>
        )}
        <button type="submit" disabled={busy || !txid.trim() || (!source && !allLocal)}>
          Trace
        </button>
      </form>
      <ErrorBox error={error} />
      {report && (
        <div className="txid-report" data-testid="txid-report" data-verdict={report.verdict}>
          <p>
            <strong data-testid="txid-verdict">
              {report.verdict === 'delivered'
                ? `Transaction ${report.txid} reached the shape`
                : `Transaction ${report.txid} is in none of these shapes`}
            </strong>
            {report.postgres && ` · Postgres: ${report.postgres.status ?? 'unknown'} (${report.postgres.note})`}
          </p>
          {report.shapes.map((shape, index) => (
            <ShapeTrace key={index} shape={shape} />
          ))}
          {report.limits.map((line, index) => (
            <p key={index} className="muted">
              {line}
            </p>
          ))}
        </div>
      )}
    </section>
  )
}
