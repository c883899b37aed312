import { ValueTable } from '../../components/ValueTable'
import type { ProxyTryResult } from '../../../shared/contract/proxy'
import { PairsTable } from './PairsTable'
import { UpstreamRequestView } from './UpstreamRequestView'

type HttpCall = NonNullable<ProxyTryResult['shape']>

const SHOWN_HEADERS =
  /^(vary|cache-control|content-type|etag|(service|electric)-|access-control-|x-accel-buffering|www-authenticate)/

function Claims({ title, claims }: { title: string; claims: Record<string, unknown> | null }) {
  if (!claims) return null
  return (
    <details open>
      <summary>{title}</summary>
      <pre className="claims">{JSON.stringify(claims, null, 2)}</pre>
    </details>
  )
}

function CallView({ title, call }: { title: string; call: HttpCall }) {
  const status = call.status < 300 ? 'ok' : call.status < 500 ? 'warn' : 'error'
  return (
    <section className="proxy-call">
      <h3>
        {title}{' '}
        <span className={`badge ${status}`} data-testid="status">
          {call.status}
        </span>
      </h3>
      <code className="call-url">
        {call.method} {call.url}
      </code>
      {call.explanation && (
        <p className="explanation" data-testid="explanation">
          {call.explanation}
        </p>
      )}
      {call.status >= 400 && <pre className="claims">{call.body}</pre>}
      <h4>Upstream request</h4>
      <UpstreamRequestView upstream={call.upstream} />
      <h4>Response headers</h4>
      <PairsTable
        testId="response-headers"
        pairs={call.headers
          .filter(([name]) => SHOWN_HEADERS.test(name))
          .map(([name, value]) => ({ name, value, className: name === 'vary' ? 'highlight' : undefined }))}
      />
    </section>
  )
}

function RowsTable({ rows }: { rows: Array<Record<string, unknown>> }) {
  const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))]
  return (
    <>
      <p className="count" data-testid="row-count">
        {rows.length} row{rows.length === 1 ? '' : 's'}
      </p>
      <div className="scroll">
        <ValueTable
          columns={columns.map((name) => ({ name }))}
          rows={rows.map((row, index) => ({
            key: index,
            cells: columns.map((column) => (column in row ? row[column] : ''))
          }))}
          limit={200}
          testId="rows"
        />
      </div>
    </>
  )
}

/** Everything one call through the proxy showed: tokens' claims, each HTTP step, the upstream request, the rows. */
export function TryResultView({ label, result }: { label: string; result: ProxyTryResult }) {
  return (
    <div className="try-result" data-testid={`try-result-${label}`}>
      <Claims title="Access token claims" claims={result.accessClaims} />
      {result.gatekeeper && <CallView title="POST gatekeeper" call={result.gatekeeper} />}
      <Claims title="Shape token claims" claims={result.shapeClaims} />
      {result.shape && <CallView title="Shape request" call={result.shape} />}
      {result.rows && <RowsTable rows={result.rows} />}
    </div>
  )
}
