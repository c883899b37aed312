import { useEffect, useState, useSyncExternalStore } from 'react'
import type { LocalShapeServer, WorkbenchSettings } from '../../../shared/contract/shapes-workbench'
import { curlCommand, electricClientCode, shapeParams, type ShapeRequestTarget } from '../../../shared/shape-client'
import { api } from '../../api'
import { ErrorBox } from '../../components/ErrorBox'
import { useCall, useInvalidateOn } from '../../hooks'
import { SqlConsole } from '../sql/SqlConsole'
import { Compose } from './Compose'
import { engineChannel } from './engine-channel'
import { LatencyView } from './LatencyView'
import { LogView } from './LogView'
import { RequestsView } from './RequestsView'
import { RowsView } from './RowsView'
import { SavedShapes } from './SavedShapes'
import { proxyStreamTarget, proxyTargetProblem } from './proxy-target'
import { WorkbenchSession, type SessionConfig } from './session'
import { rememberWorkbenchSession } from '../doctor/workbench-sessions'
import { SseFramesView } from './SseFramesView'
import { SessionStatus } from './StreamStatus'
import { SubsetPanel } from './SubsetPanel'
import { whereErrorOf } from './where-error'
import { WriteGenerator } from './WriteGenerator'
import './shapes.css'

const INITIAL: WorkbenchSettings = {
  definition: { table: '', columns: [], where: '', params: [], replica: 'default', log: 'full' },
  live: 'long-poll',
  offset: '-1',
  target: { kind: 'local' }
}

const TABS = [
  ['rows', 'Rows'],
  ['log', 'Log'],
  ['sse', 'SSE frames'],
  ['requests', 'Requests & cache'],
  ['latency', 'Latency'],
  ['subset', 'Subset']
] as const
type Tab = (typeof TABS)[number][0]

type DirectTarget = Exclude<WorkbenchSettings['target'], { kind: 'proxy' }>

/** Where requests go: the app's own shape server (its URL, or this UI's origin) or a URL with its headers and params. */
function requestTarget(
  target: DirectTarget,
  local: LocalShapeServer | undefined,
  localSecret: string
): ShapeRequestTarget {
  if (target.kind === 'local') {
    return {
      url: `${local?.url ?? window.location.origin}/v1/shape`,
      headers: {},
      params: local?.secretRequired && localSecret ? { secret: localSecret } : {}
    }
  }
  const entries = (list: typeof target.headers) =>
    Object.fromEntries(list.filter((entry) => entry.name.trim()).map((entry) => [entry.name.trim(), entry.value]))
  return { url: target.url, headers: entries(target.headers), params: entries(target.params) }
}

/**
 * Where the app's own shape server tells commit and append times (`GET /v1/debug/commit-times`): the local and proxy
 * targets read the app's Postgres through it; a custom URL ending in /v1/shape may be another Syncscope server.
 */
function commitTimesEndpoint(
  target: WorkbenchSettings['target'],
  local: LocalShapeServer | undefined,
  localSecret: string
): SessionConfig['commitTimes'] {
  const secret: Record<string, string> = local?.secretRequired && localSecret ? { secret: localSecret } : {}
  if (target.kind !== 'custom')
    return { url: `${local?.url ?? window.location.origin}/v1/debug/commit-times`, params: secret }
  if (!/\/v1\/shape\/?$/.test(new URL(target.url).pathname)) return null
  const url = new URL(target.url)
  url.pathname = url.pathname.replace(/\/v1\/shape\/?$/, '/v1/debug/commit-times')
  const params = Object.fromEntries(
    target.params.filter((entry) => entry.name.trim()).map((entry) => [entry.name.trim(), entry.value])
  )
  return { url: url.toString(), params }
}

/** Module-level so the event subscription is not renewed on every render. */
const TABLE_QUERIES = ['db.tables'] as const
const PROXY_QUERIES = ['proxy.status'] as const
const COPY_NEEDS_DIRECT_TARGET =
  'A proxy call needs a token asked for per run: copy from the local server or a custom URL target'
const noSession = () => () => undefined

export function ShapeWorkbench() {
  const tables = useCall('db.tables', {})
  const local = useCall('shapesWorkbench.localServer', {})
  const proxy = useCall('proxy.status', {})
  useInvalidateOn('db.changed', TABLE_QUERIES)
  useInvalidateOn('proxy.config', PROXY_QUERIES)
  const [settings, setSettings] = useState<WorkbenchSettings>(INITIAL)
  const [localSecret, setLocalSecret] = useState('')
  const [clients, setClients] = useState(1)
  const [startError, setStartError] = useState<Error | null>(null)
  const [dropping, setDropping] = useState(false)
  const [session, setSession] = useState<WorkbenchSession | null>(null)
  /** Counts runs, so a restart gives the Subset panel (kept mounted across tabs) a fresh state. */
  const [runs, setRuns] = useState(0)
  const [tab, setTab] = useState<Tab>('rows')
  const [exported, setExported] = useState<{ title: string; text: string } | null>(null)
  const [fallback, setFallback] = useState<string | null>(null)
  // only what this component shows itself: the views below follow the session's updates on their own
  const phase = useSyncExternalStore(session?.subscribe ?? noSession, () => session?.summary?.state.phase)
  const streamError = useSyncExternalStore(session?.subscribe ?? noSession, () => session?.summary?.state.error ?? null)
  useEffect(() => () => session?.end(), [session])

  /** Null for the proxy target: its requests need a token asked for per run, so it has no fixed curl or client code. */
  const target = settings.target.kind === 'proxy' ? null : requestTarget(settings.target, local.data, localSecret)
  const notRunnable =
    settings.target.kind === 'proxy'
      ? proxyTargetProblem(settings.target, settings.definition, proxy.data)
      : settings.definition.table
        ? null
        : 'pick a table'
  const streamOptions = async (
    note: (text: string) => void
  ): Promise<Pick<SessionConfig, 'url' | 'headers' | 'params' | 'onError'>> => {
    if (settings.target.kind === 'proxy') {
      if (!proxy.data?.running) throw new Error('the proxy is not running')
      return proxyStreamTarget(proxy.data, settings.target, settings.definition, {
        fetchToken: (userId) => api.call('proxy.userToken', { userId }),
        note
      })
    }
    const direct = requestTarget(settings.target, local.data, localSecret)
    return {
      url: direct.url,
      headers: direct.headers,
      params: { ...shapeParams(settings.definition), ...direct.params }
    }
  }
  const run = async () => {
    setStartError(null)
    try {
      // what happens before the session exists (a gatekeeper's grant) is noted when it starts, later ones at once
      const early: string[] = []
      let started: WorkbenchSession | null = null
      const options = await streamOptions((text) => (started ? started.note(text) : early.push(text)))
      const channel = engineChannel()
      const next = new WorkbenchSession(
        {
          ...options,
          definition: settings.definition,
          live: settings.live,
          offset: settings.offset,
          clients,
          appDatabase: settings.target.kind !== 'custom',
          commitTimes: commitTimesEndpoint(settings.target, local.data, localSecret)
        },
        channel,
        early
      )
      started = next
      setFallback(channel.fallback)
      setSession(next)
      rememberWorkbenchSession(settings.definition.table, next)
      setRuns((count) => count + 1)
    } catch (error) {
      setStartError(error as Error)
    }
  }
  const drop = async () => {
    if (!session) return
    setStartError(null)
    setDropping(true)
    try {
      await session.drop()
    } catch (error) {
      setStartError(error as Error)
    } finally {
      setDropping(false)
    }
  }
  const exportAs = (title: string, text: string) => {
    setExported({ title, text })
    void navigator.clipboard?.writeText(text).catch(() => undefined)
  }
  const exportClientCode = (direct: ShapeRequestTarget) => {
    const headerBrand = settings.target.kind === 'local' ? local.data?.headerBrand : undefined
    exportAs(
      '@electric-sql/client',
      electricClientCode(settings.definition, direct, { offset: settings.offset, live: settings.live, headerBrand })
    )
  }
  const whereError = session ? whereErrorOf(streamError, session.config.definition.where) : null

  return (
    <div className="page shape-workbench">
      <h1>Shape workbench</h1>
      <ErrorBox error={tables.error ?? local.error ?? startError} />
      <div className="workbench-layout">
        <section className="panel compose-panel" aria-label="Compose">
          <h2>Compose</h2>
          <Compose
            settings={settings}
            onChange={setSettings}
            tables={tables.data ?? []}
            localServer={local.data}
            proxy={proxy.data}
            localSecret={localSecret}
            onLocalSecret={setLocalSecret}
            whereError={whereError}
          />
          <div className="toolbar">
            <label title="Identical clients of this shape, to see what a shared cache would serve and collapse">
              clients{' '}
              <input
                aria-label="clients"
                type="number"
                className="narrow"
                min={1}
                max={10}
                value={clients}
                onChange={(event) => setClients(Math.min(10, Math.max(1, Number(event.target.value) || 1)))}
              />
            </label>
            <button
              type="button"
              onClick={() => void run()}
              disabled={notRunnable !== null}
              title={notRunnable ?? undefined}
            >
              {session ? 'Restart' : 'Start'}
            </button>
            <button
              type="button"
              className="secondary"
              onClick={() => session?.stop()}
              disabled={!session || phase === 'stopped'}
            >
              Stop
            </button>
            <button
              type="button"
              className="secondary"
              onClick={() => void drop()}
              disabled={!session || !target || dropping || phase === 'stopped'}
              title={
                target
                  ? 'DELETE the shape on its server: every client of it gets 409 must-refetch and starts again'
                  : 'A proxy target cannot drop shapes'
              }
            >
              Drop shape
            </button>
          </div>
          <div className="toolbar">
            <button
              type="button"
              className="secondary"
              disabled={!target || !settings.definition.table}
              title={target ? undefined : COPY_NEEDS_DIRECT_TARGET}
              onClick={() => target && exportAs('curl', curlCommand(settings.definition, target, settings.offset))}
            >
              Copy as curl
            </button>
            <button
              type="button"
              className="secondary"
              disabled={!target || !settings.definition.table}
              title={target ? undefined : COPY_NEEDS_DIRECT_TARGET}
              onClick={() => target && exportClientCode(target)}
            >
              Copy as @electric-sql/client code
            </button>
          </div>
          {exported && (
            <div className="exported">
              <p className="muted">Copied ({exported.title}):</p>
              <pre data-testid="exported">{exported.text}</pre>
            </div>
          )}
          <SavedShapes settings={settings} onLoad={setSettings} />
        </section>
        <section className="panel stream-panel" aria-label="Stream">
          {session && phase ? (
            <SessionStatus session={session} />
          ) : (
            <p className="muted">Compose a shape and press Start.</p>
          )}
          {fallback && (
            <p className="warn" role="status">
              {fallback}
            </p>
          )}
          {streamError && !whereError && (
            <div className="error-box" role="alert" data-testid="stream-error">
              {streamError.message}
            </div>
          )}
          <div className="tabs" role="tablist">
            {TABS.map(([id, title]) => (
              <button
                key={id}
                type="button"
                role="tab"
                aria-selected={tab === id}
                className={tab === id ? '' : 'secondary'}
                onClick={() => setTab(id)}
              >
                {title}
              </button>
            ))}
          </div>
          {session && tab === 'rows' && <RowsView session={session} />}
          {session && tab === 'log' && <LogView session={session} />}
          {session && tab === 'sse' && <SseFramesView session={session} />}
          {session && tab === 'requests' && <RequestsView session={session} />}
          {session && tab === 'latency' && <LatencyView session={session} />}
          {session && (
            <div hidden={tab !== 'subset'}>
              <SubsetPanel key={runs} session={session} />
            </div>
          )}
        </section>
        <aside className="side-panel" aria-label="Change data">
          <SqlConsole />
          <WriteGenerator tables={tables.data ?? []} />
        </aside>
      </div>
    </div>
  )
}
