import { useState } from 'react'
import { isProtocolHeader } from '../../../shared/protocol'
import {
  cacheVerdict,
  parseCacheControl,
  simulateSharedCache,
  type Exchange,
  type HeaderList,
  type SimulatedRequest
} from '../../../shared/shape-client'
import type { WorkbenchSession } from './session'

const SHOWN = 500

const headerValue = (headers: HeaderList | undefined, name: string) =>
  headers?.find(([header]) => header.toLowerCase() === name)?.[1] ?? null

function pathAndQuery(url: string): string {
  const parsed = new URL(url)
  return `${parsed.pathname}${parsed.search}`
}

function Headers({ title, headers }: { title: string; headers: HeaderList }) {
  return (
    <div>
      <h3>{title}</h3>
      {headers.length === 0 && <p className="muted">(none besides what the browser adds)</p>}
      <table className="grid compact headers">
        <tbody>
          {headers.map(([name, value], index) => (
            <tr key={index} className={isProtocolHeader(name) ? 'protocol-header' : ''}>
              <th>{name}</th>
              <td className="mono">{value}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

function CachePanel({ exchange, simulated }: { exchange: Exchange; simulated: SimulatedRequest | undefined }) {
  const cacheControl = headerValue(exchange.response?.headers, 'cache-control')
  return (
    <section className="cache-panel" aria-label="Cache">
      <h3>cache-control</h3>
      <p className="mono" data-testid="cache-control">
        {cacheControl ?? '(none)'}
      </p>
      <ul className="directives">
        {parseCacheControl(cacheControl).map((directive) => (
          <li key={directive.name}>
            <code>{directive.name}</code>
            {directive.value !== null && <> = {directive.value}</>}
          </li>
        ))}
      </ul>
      <ul className="verdict" data-testid="cache-verdict">
        {cacheVerdict(cacheControl).map((sentence) => (
          <li key={sentence}>{sentence}</li>
        ))}
      </ul>
      <dl className="facts">
        <dt>etag</dt>
        <dd className="mono">{headerValue(exchange.response?.headers, 'etag') ?? '(none)'}</dd>
        <dt>vary</dt>
        <dd className="mono">{headerValue(exchange.response?.headers, 'vary') ?? '(none)'}</dd>
        {simulated && (
          <>
            <dt>shared cache</dt>
            <dd>
              <span className={`badge cache-${simulated.outcome}`}>{simulated.outcome}</span> {simulated.reason}
              {simulated.sharedTtlSeconds !== null && `; stored, fresh for ${simulated.sharedTtlSeconds} s`}
            </dd>
          </>
        )}
      </dl>
    </section>
  )
}

function ExchangeDetail({ exchange, simulated }: { exchange: Exchange; simulated: SimulatedRequest | undefined }) {
  return (
    <div className="exchange-detail" data-testid="exchange-detail">
      <p className="mono url">
        {exchange.request.method} {exchange.request.url}
      </p>
      {exchange.failure && <div className="error-box">{exchange.failure.message}</div>}
      {new URL(exchange.request.url).origin !== window.location.origin && (
        <p className="muted">
          Cross-origin request: the browser shows only the response headers the server exposes (CORS).
        </p>
      )}
      {exchange.response && <CachePanel exchange={exchange} simulated={simulated} />}
      <div className="detail-columns">
        <Headers title="Request headers" headers={exchange.request.headers} />
        {exchange.response && (
          <Headers
            title={`Response headers (${exchange.response.status} ${exchange.response.statusText})`}
            headers={exchange.response.headers}
          />
        )}
      </div>
      {exchange.body && (
        <>
          <h3>
            Body ({exchange.body.size} bytes{exchange.body.truncated ? ', cut' : ''})
          </h3>
          <pre className="body">{exchange.body.text}</pre>
        </>
      )}
    </div>
  )
}

interface Row {
  /** `#3`, or `2·#3` (client 2's third request) when several clients run. */
  label: string
  exchange: Exchange
}

/** Every client's exchanges in the order they were sent, labelled by client. */
function rowsOf(session: WorkbenchSession): Row[] {
  const many = session.recorders.length > 1
  return session.recorders
    .flatMap((recorder, client) =>
      recorder.exchanges.map((exchange) => ({
        label: `${many ? `${client + 1}·` : ''}#${exchange.request.id}`,
        exchange
      }))
    )
    .sort((a, b) => a.exchange.request.at - b.exchange.request.at)
    .slice(-SHOWN)
}

/** Live requests for the same URL in flight at once, which a collapsing CDN would serve with one origin request. */
function CollapseNote({ rows, simulated }: { rows: Row[]; simulated: SimulatedRequest | undefined }) {
  if (!simulated || simulated.collapsesWith.length === 0) return null
  const others = simulated.collapsesWith.map((index) => rows[index]?.label).join(', ')
  return (
    <span className="badge warn" title="A collapsing CDN would send one origin request for these">
      collapses with {others}
    </span>
  )
}

/** Every HTTP exchange of the stream(s), with headers, the cache verdict and a shared-cache simulation. */
export function RequestsView({ session }: { session: WorkbenchSession }) {
  const [selected, setSelected] = useState<Exchange | null>(null)
  const rows = rowsOf(session)
  const simulation = simulateSharedCache(rows.map((row) => row.exchange))
  const found = rows.findIndex((row) => row.exchange === selected)
  const chosen = found === -1 ? rows.length - 1 : found
  return (
    <div className="requests-view">
      {rows.length > 0 && session.recorders.length > 1 && (
        <p className="muted">
          {session.recorders.length} identical clients: the shared-cache column shows what a CDN in front of the server
          would answer each of them.
        </p>
      )}
      <div className="scroll">
        <table className="grid compact" data-testid="requests">
          <thead>
            <tr>
              <th>#</th>
              <th>status</th>
              <th>kind</th>
              <th>shared cache</th>
              <th>time</th>
              <th>size</th>
              <th>request</th>
            </tr>
          </thead>
          <tbody>
            {rows.map(({ label, exchange }, index) => {
              const { request, response, body, failure } = exchange
              const done = body?.at ?? failure?.at
              return (
                <tr
                  key={label}
                  className={index === chosen ? 'selected' : ''}
                  onClick={() => setSelected(exchange)}
                  data-request={label}
                >
                  <td>{label}</td>
                  <td className={response && response.status >= 400 ? 'warn' : ''}>
                    {response?.status ?? (failure ? 'failed' : '…')}
                  </td>
                  <td>{request.live === 'off' ? 'sync' : request.live}</td>
                  <td>
                    <span className={`badge cache-${simulation[index]?.outcome}`}>{simulation[index]?.outcome}</span>{' '}
                    <CollapseNote rows={rows} simulated={simulation[index]} />
                  </td>
                  <td className="num">{done ? `${Math.round(done - request.at)} ms` : '…'}</td>
                  <td className="num">{body ? body.size : ''}</td>
                  <td className="mono url-cell" title={request.url}>
                    {pathAndQuery(request.url)}
                  </td>
                </tr>
              )
            })}
          </tbody>
        </table>
      </div>
      {rows[chosen] && <ExchangeDetail exchange={(rows[chosen] as Row).exchange} simulated={simulation[chosen]} />}
    </div>
  )
}
