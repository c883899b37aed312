import { useEffect, useState, useSyncExternalStore } from 'react'
import type { LocalShapeServer, WorkbenchSettings } from '../../../shared/contract/shapes-workbench'
import { curlCommand, electricClientCode, type ShapeRequestTarget } from '../../../shared/shape-client'
import { ErrorBox } from '../../components/ErrorBox'
import { useCall, useInvalidateOn } from '../../hooks'
import { SqlConsole } from '../sql/SqlConsole'
import { Compose } from './Compose'
import { LogView } from './LogView'
import { RequestsView } from './RequestsView'
import { RowsView } from './RowsView'
import { SavedShapes } from './SavedShapes'
import { WorkbenchSession } from './session'
import { SseFramesView } from './SseFramesView'
import { StreamStatus } from './StreamStatus'
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
  ['subset', 'Subset']
] as const
type Tab = (typeof TABS)[number][0]

/** Where requests go: the app's own shape server (its URL, or this UI's origin) or a URL with its headers and params. */
function requestTarget(settings: WorkbenchSettings, local: LocalShapeServer | undefined, localSecret: string): ShapeRequestTarget {
  const { target } = settings
  if (target.kind === 'local') {
    return { url: `${local?.url ?? window.location.origin}/v1/shape`, headers: {}, params: local?.secretRequired && localSecret ? { secret: localSecret } : {} }
  }
  const entries = (list: typeof target.headers) => Object.fromEntries(list.filter((entry) => entry.name.trim()).map((entry) => [entry.name.trim(), entry.value]))
  return { url: target.url, headers: entries(target.headers), params: entries(target.params) }
}

/** Module-level so the event subscription is not renewed on every render. */
const TABLE_QUERIES = ['db.tables'] as const
const noSession = () => () => undefined
const zero = () => 0

export function ShapeWorkbench() {
  const tables = useCall('db.tables', {})
  const local = useCall('shapesWorkbench.localServer', {})
  useInvalidateOn('db.changed', TABLE_QUERIES)
  const [settings, setSettings] = useState<WorkbenchSettings>(INITIAL)
  const [localSecret, setLocalSecret] = useState('')
  const [clients, setClients] = useState(1)
  const [startError, setStartError] = useState<Error | null>(null)
  const [session, setSession] = useState<WorkbenchSession | null>(null)
  /** Counts runs, so a restart gives the Subset panel (kept mounted across tabs) a fresh state. */
  const [runs, setRuns] = useState(0)
  const [tab, setTab] = useState<Tab>('rows')
  const [exported, setExported] = useState<{ title: string; text: string } | null>(null)
  useSyncExternalStore(session?.subscribe ?? noSession, session?.getVersion ?? zero)
  useEffect(() => () => session?.stop(), [session])

  const target = requestTarget(settings, local.data, localSecret)
  const run = () => {
    setStartError(null)
    try {
      const next = new WorkbenchSession({ url: target.url, definition: settings.definition, headers: target.headers, params: target.params, live: settings.live, offset: settings.offset, clients })
      setSession(next)
      setRuns((count) => count + 1)
      next.start()
    } catch (error) {
      setStartError(error as Error)
    }
  }
  const exportAs = (title: string, text: string) => {
    setExported({ title, text })
    void navigator.clipboard?.writeText(text).catch(() => undefined)
  }
  const exportClientCode = () => {
    const headerBrand = settings.target.kind === 'local' ? local.data?.headerBrand : undefined
    exportAs('@electric-sql/client', electricClientCode(settings.definition, target, { offset: settings.offset, live: settings.live, headerBrand }))
  }
  const state = session?.shape.stream.current
  const whereError = session && state ? whereErrorOf(state.error, session.config.definition.where) : null

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
            localSecret={localSecret}
            onLocalSecret={setLocalSecret}
            whereError={whereError}
          />
          <div className="toolbar">
            <label title="Identical clients of this shape, to see what a shared cache would serve and collapse">
              clients{' '}
              <input aria-label="clients" type="number" className="narrow" min={1} max={10} value={clients} onChange={(event) => setClients(Math.min(10, Math.max(1, Number(event.target.value) || 1)))} />
            </label>
            <button type="button" onClick={run} disabled={!settings.definition.table}>
              {session ? 'Restart' : 'Start'}
            </button>
            <button type="button" className="secondary" onClick={() => session?.stop()} disabled={!session || state?.phase === 'stopped'}>
              Stop
            </button>
          </div>
          <div className="toolbar">
            <button type="button" className="secondary" disabled={!settings.definition.table} onClick={() => exportAs('curl', curlCommand(settings.definition, target, settings.offset))}>
              Copy as curl
            </button>
            <button
              type="button"
              className="secondary"
              disabled={!settings.definition.table}
              onClick={exportClientCode}
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
          {session && state ? <StreamStatus state={state} /> : <p className="muted">Compose a shape and press Start.</p>}
          {state?.error && !whereError && (
            <div className="error-box" role="alert" data-testid="stream-error">
              {state.error.message}
            </div>
          )}
          <div className="tabs" role="tablist">
            {TABS.map(([id, title]) => (
              <button key={id} type="button" role="tab" aria-selected={tab === id} className={tab === id ? '' : 'secondary'} onClick={() => setTab(id)}>
                {title}
              </button>
            ))}
          </div>
          {session && tab === 'rows' && <RowsView session={session} />}
          {session && tab === 'log' && <LogView session={session} />}
          {session && tab === 'sse' && <SseFramesView session={session} />}
          {session && tab === 'requests' && <RequestsView session={session} />}
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
