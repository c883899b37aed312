import type { RowDivergence, VerifiedShape, VerifyReport } from '../../../../shared/contract/timetravel'
import { originText } from '../../../../shared/timetravel-text'
import { cellText } from './entry-text'

const rowText = (row: Record<string, unknown> | null, columns: readonly string[]): string =>
  row ? columns.map((column) => `${column}=${cellText(row[column])}`).join(' ') : 'no row'

function DivergingRow({ row }: { row: RowDivergence }) {
  return (
    <tr data-testid="diverging-row" data-kind={row.kind}>
      <td className="mono">{row.key}</td>
      <td>
        <span className={`badge ${row.kind === 'changed-since' ? '' : 'error'}`}>{row.kind}</span>
      </td>
      <td className="mono">{rowText(row.client, row.columns)}</td>
      <td className="mono">{rowText(row.postgres, row.columns)}</td>
      <td data-testid="cause">
        {row.cause}
        {row.origins.length > 0 && (
          <div className="muted">client's row made by: {row.origins.map(originText).join(', ')}</div>
        )}
      </td>
    </tr>
  )
}

function ShapeVerdict({ shape }: { shape: VerifiedShape }) {
  return (
    <div className="verified-shape" data-testid="verified-shape" data-verdict={shape.verdict}>
      <p>
        <span className={`badge ${shape.verdict === 'diverged' ? 'error' : 'ok'}`}>{shape.verdict}</span>{' '}
        <code>{shape.url}</code> · handle <code>{shape.handle ?? '?'}</code> · {shape.received} messages in{' '}
        {shape.requests} requests, up to <code>{shape.lastOffset}</code> · client {shape.counts.client} rows, Postgres{' '}
        {shape.counts.postgres}
        {shape.counts.log !== null && `, the log ${shape.counts.log}`} · log: {shape.log.description}
      </p>
      {shape.anomalies.length > 0 && (
        <table className="grid compact" aria-label="Messages not as the log has them">
          <thead>
            <tr>
              <th>stream</th>
              <th>message</th>
              <th>requests</th>
            </tr>
          </thead>
          <tbody>
            {shape.anomalies.map((anomaly, index) => (
              <tr key={index} data-testid="anomaly" data-kind={anomaly.kind}>
                <td>
                  <span className="badge error">{anomaly.kind}</span>
                </td>
                <td>{anomaly.text}</td>
                <td>{anomaly.requests.map((n) => `#${n}`).join(' ')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {shape.rows.length > 0 && (
        <table className="grid compact" aria-label="Rows that differ from Postgres">
          <thead>
            <tr>
              <th>row</th>
              <th>kind</th>
              <th>client</th>
              <th>Postgres</th>
              <th>why</th>
            </tr>
          </thead>
          <tbody>
            {shape.rows.map((row) => (
              <DivergingRow key={row.key} row={row} />
            ))}
          </tbody>
        </table>
      )}
      {shape.notes.map((note, index) => (
        <p key={index} className="muted">
          {note}
        </p>
      ))}
    </div>
  )
}

/** What verify found: per shape, the messages not as the log has them and each row that differs from Postgres. */
export function VerifyReportView({ report }: { report: VerifyReport }) {
  return (
    <div className="verify-report scroll" data-testid="verify-report" data-verdict={report.verdict}>
      <p>
        <strong data-testid="verify-verdict">
          {report.verdict === 'equal' ? 'The client holds what Postgres holds' : 'The client diverged from Postgres'}
        </strong>{' '}
        · {report.source.name} ({report.source.kind}) against{' '}
        {report.postgres.kind === 'database' ? 'the database' : "the bundle's rows"} read at {report.postgres.readAt}
      </p>
      {report.shapes.map((shape, index) => (
        <ShapeVerdict key={index} shape={shape} />
      ))}
      {report.notes.map((note, index) => (
        <p key={index} className="muted">
          {note}
        </p>
      ))}
    </div>
  )
}
