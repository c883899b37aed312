import { useState, type FormEvent } from 'react'
import type { ProxyStatus, ProxyTryResult } from '../../../shared/contract/proxy'
import { ErrorBox } from '../../components/ErrorBox'
import { useCall, useCallMutation, useInvalidateOn } from '../../hooks'
import { ConfigEditor } from './ConfigEditor'
import { ExchangeList } from './ExchangeList'
import { TryResultView } from './TryResultView'
import './proxy.css'

type Running = Extract<ProxyStatus, { running: true }>
const NOBODY = ''

function StatusPanel({ status }: { status: Running }) {
  return (
    <section className="panel" aria-label="Proxy status">
      <dl className="facts">
        <dt>Proxy</dt>
        <dd>
          <code data-testid="proxy-url">{status.url}</code>
        </dd>
        <dt>Upstream</dt>
        <dd>
          <code>{status.upstream.url ?? 'the local shape server (address unknown: set upstream.url)'}</code> · headers{' '}
          <code>{status.upstream.headerBrand}-*</code>
          {status.upstream.hasSecret && ' · secret set by the proxy'}
        </dd>
        <dt>Config</dt>
        <dd>
          <code>{status.configPath}</code> · loaded {status.loadedAt.slice(11, 19)}
        </dd>
      </dl>
      {status.reloadError && (
        <div className="error-box" role="alert" data-testid="reload-error">
          The file changed but is not a valid config; the previous config stays in force.{'\n'}
          {status.reloadError.message}
        </div>
      )}
    </section>
  )
}

function TryPanel({ status }: { status: Running }) {
  const [kind, setKind] = useState<'shape' | 'gatekeeper'>('shape')
  const [name, setName] = useState(status.shapes[0]?.name ?? '')
  const [table, setTable] = useState(status.gatekeeperTables[0] ?? '')
  const [where, setWhere] = useState('')
  const [userA, setUserA] = useState(status.users[0]?.id ?? NOBODY)
  const [userB, setUserB] = useState(status.users[1]?.id ?? NOBODY)
  const callA = useCallMutation('proxy.try', ['proxy.exchanges'])
  const callB = useCallMutation('proxy.try', ['proxy.exchanges'])
  const onSubmit = (event: FormEvent) => {
    event.preventDefault()
    const target =
      kind === 'shape' ? { kind, name } : { kind, table, request: where.trim() ? { where: where.trim() } : {} }
    callA.mutate({ userId: userA || null, target })
    callB.mutate({ userId: userB || null, target })
  }
  const userSelect = (label: string, value: string, onChange: (id: string) => void) => (
    <label>
      {label}
      <select value={value} onChange={(event) => onChange(event.target.value)} aria-label={label}>
        <option value={NOBODY}>no credentials</option>
        {status.users.map((user) => (
          <option key={user.id} value={user.id}>
            {user.name} ({user.roles.join(', ') || 'no roles'})
          </option>
        ))}
      </select>
    </label>
  )
  const results: Array<[string, string, { data?: ProxyTryResult; error: Error | null }]> = [
    ['a', userA, callA],
    ['b', userB, callB]
  ]
  return (
    <section className="panel" aria-label="Call the proxy">
      <h2>Call the proxy as two users</h2>
      <form className="inline-form try-form" onSubmit={onSubmit}>
        <label>
          Pattern
          <select
            value={kind}
            onChange={(event) => setKind(event.target.value as 'shape' | 'gatekeeper')}
            aria-label="Pattern"
          >
            <option value="shape">proxy auth: a named shape</option>
            <option value="gatekeeper">gatekeeper → token-checking proxy</option>
          </select>
        </label>
        {kind === 'shape' ? (
          <label>
            Shape
            <select value={name} onChange={(event) => setName(event.target.value)} aria-label="Shape">
              {status.shapes.map((shape) => (
                <option key={shape.name} value={shape.name}>
                  {shape.name} — {shape.table}
                  {shape.where ? ` where ${shape.where}` : ''}
                </option>
              ))}
            </select>
          </label>
        ) : (
          <>
            <label>
              Table
              <select value={table} onChange={(event) => setTable(event.target.value)} aria-label="Table">
                {status.gatekeeperTables.map((candidate) => (
                  <option key={candidate}>{candidate}</option>
                ))}
              </select>
            </label>
            <label>
              Where (asked by the client)
              <input
                value={where}
                onChange={(event) => setWhere(event.target.value)}
                placeholder="optional, e.g. priority > 2"
                aria-label="Where"
              />
            </label>
          </>
        )}
        {userSelect('User A', userA, setUserA)}
        {userSelect('User B', userB, setUserB)}
        <button type="submit" disabled={callA.isPending || callB.isPending}>
          Send
        </button>
      </form>
      <p className="muted">
        Both responses come from the same URL; the proxy answers <code>Vary: Authorization</code>, so a shared cache
        keeps them apart.
      </p>
      <div className="side-by-side">
        {results.map(([label, userId, call]) => (
          <div key={label}>
            <h3>{status.users.find((user) => user.id === userId)?.name ?? 'No credentials'}</h3>
            <ErrorBox error={call.error} />
            {call.data && <TryResultView label={label} result={call.data} />}
          </div>
        ))}
      </div>
    </section>
  )
}

function StartPanel({ reason }: { reason: string }) {
  const start = useCallMutation('proxy.start', ['proxy.status', 'proxy.config', 'proxy.exchanges'])
  return (
    <section className="panel" aria-label="Start the proxy">
      <p data-testid="proxy-not-running">{reason}</p>
      <button onClick={() => start.mutate({})} disabled={start.isPending}>
        Start the proxy
      </button>
      <ErrorBox error={start.error} />
    </section>
  )
}

/** The Proxy playground: call the authorising proxy and the gatekeeper as configured users, and edit their config. */
export function ProxyPlayground() {
  const status = useCall('proxy.status', {})
  useInvalidateOn('proxy.config', ['proxy.status', 'proxy.config'])
  const data = status.data
  return (
    <div className="page proxy-page">
      <h1>Proxy playground</h1>
      <ErrorBox error={status.error} />
      {data && !data.running && <StartPanel reason={data.reason} />}
      {data?.running && (
        <>
          <StatusPanel status={data} />
          <TryPanel status={data} />
          <ConfigEditor />
          <ExchangeList />
        </>
      )}
    </div>
  )
}
