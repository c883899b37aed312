import { useState } from 'react'
import { isProtocolHeader } from '../../../shared/protocol'
import {
  cacheVerdict,
  parseCacheControl,
  type Exchange,
  type HeaderList,
  type SimulatedRequest
} from '../../../shared/shape-client'
import type { WorkbenchSession } from './session'
import { useListView } from './use-view'
import { SearchBox, VirtualTable } from './VirtualTable'

const ROW_HEIGHT = 24

const headerValue = (headers: HeaderList | undefined, name: string) =>
  headers?.find(([header]) => header.toLowerCase() === name)?.[1] ?? null

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

/** Every HTTP exchange of the stream(s) (the newest kept), with headers, the cache verdict and a shared-cache simulation. */
export function RequestsView({ session }: { session: WorkbenchSession }) {
  const [selected, setSelected] = useState<string | null>(null)
  const [search, setSearch] = useState('')
  const { range, view } = useListView(session, ROW_HEIGHT, (rows) => ({ kind: 'requests', search, selected, ...rows }))
  const chosen = view?.selected
  return (
    <div className="requests-view">
      {view && view.total > 0 && view.clients > 1 && (
        <p className="muted">
          {view.clients} identical clients: the shared-cache column shows what a CDN in front of the server would answer
          each of them.
        </p>
      )}
      <div className="toolbar">
        <SearchBox label="search the requests" value={search} onChange={setSearch} />
        <span className="count" data-testid="requests-count">
          {view ? `${view.matched} shown` : ''}
          {view && view.kept < view.total ? ` (the newest ${view.kept} of ${view.total} kept)` : ''}
        </span>
      </div>
      <VirtualTable
        testId="requests"
        range={range}
        view={view}
        rowHeight={ROW_HEIGHT}
        columns={['#', 'status', 'kind', 'shared cache', 'time', 'size', 'request']}
        render={(row) => (
          <tr
            key={row.label}
            className={row.label === chosen?.label ? 'selected' : ''}
            onClick={() => setSelected(row.label)}
            data-request={row.label}
          >
            <td>{row.label}</td>
            <td className={row.status !== null && row.status >= 400 ? 'warn' : ''}>
              {row.status ?? (row.failed ? 'failed' : '…')}
            </td>
            <td>{row.live === 'off' ? 'sync' : row.live}</td>
            <td>
              <span className={`badge cache-${row.simulated?.outcome}`}>{row.simulated?.outcome}</span>{' '}
              {row.collapsesWith.length > 0 && (
                <span className="badge warn" title="A collapsing CDN would send one origin request for these">
                  collapses with {row.collapsesWith.join(', ')}
                </span>
              )}
            </td>
            <td className="num">{row.ms !== null ? `${row.ms} ms` : '…'}</td>
            <td className="num">{row.size ?? ''}</td>
            <td className="mono url-cell" title={row.url}>
              {row.url}
            </td>
          </tr>
        )}
      />
      {chosen && <ExchangeDetail exchange={chosen.exchange} simulated={chosen.simulated ?? undefined} />}
    </div>
  )
}
