import { useEffect, useState } from 'react'
import type { BundleSummary, LogSourceInput, ShapeLogInfo } from '../../../../shared/contract/timetravel'
import { download } from '../../../components/download'
import { ErrorBox } from '../../../components/ErrorBox'
import { api } from '../../../api'
import { fileText } from './file-text'
import { ShapeAtView } from './ShapeAtView'
import { TxidPanel } from './TxidPanel'
import { useTask } from './use-task'
import { VerifyPanel } from './VerifyPanel'
import './timetravel.css'

type Opened = ShapeLogInfo & { bundle?: BundleSummary }

/** What the workbench gives time travel of its session. */
export interface TimeTravelSession {
  /** The server's own log of the session's shape: the local server's files, or the service followed from -1. */
  serverLog: (() => LogSourceInput) | null
  /** What the session received so far, as a recording. */
  recording(): Promise<{ name: string; text: string }>
  /** The shapes come from the app's own Postgres (verify and bundles read it). */
  appDatabase: boolean
  local: boolean
}

const SOURCE_NAMES = {
  'local-files': "the local server's files",
  http: 'the log followed over HTTP',
  bundle: 'a bundle, read-only',
  recording: 'what this session received'
} as const

/**
 * The workbench's time travel: a shape log opened in main (this session's, or a repro bundle's, read-only), the
 * scrubber and rows over it, Verify, the txid tracer, and the bundle export.
 */
export function TimeTravelTab({ session }: { session: TimeTravelSession | null }) {
  const { result: opened, error: openError, busy, run: open } = useTask<Opened>({ keep: true })
  const [exportError, setExportError] = useState<Error | null>(null)
  // the log kept in main is let go with the tab
  useEffect(
    () => () => {
      if (opened) void api.call('timetravel.close', { logId: opened.logId }).catch(() => undefined)
    },
    [opened]
  )
  const openServerLog = (source: () => LogSourceInput) => open(() => api.call('timetravel.open', { source: source() }))
  const openReceived = (from: TimeTravelSession) =>
    open(async () => api.call('timetravel.open', { source: { kind: 'recording', recording: await from.recording() } }))
  const openBundleFile = (file: File) => open(async () => api.call('timetravel.openBundle', await fileText(file)))
  const exportBundle = async (logId: string, from: TimeTravelSession) => {
    setExportError(null)
    try {
      const bundle = await api.call('timetravel.exportBundle', {
        logId,
        recording: await from.recording(),
        readPostgres: from.appDatabase
      })
      download(bundle.name, bundle.text)
    } catch (failure) {
      setExportError(failure as Error)
    }
  }
  const isBundle = opened?.source.kind === 'bundle'
  return (
    <div className="time-travel">
      <div className="toolbar">
        {session?.serverLog && (
          <button
            type="button"
            disabled={busy}
            onClick={() => void openServerLog(session.serverLog as () => LogSourceInput)}
          >
            {session.local ? "Read the server's log" : 'Follow the log from -1'}
          </button>
        )}
        {session && (
          <button type="button" className="secondary" disabled={busy} onClick={() => void openReceived(session)}>
            Read what this session received
          </button>
        )}
        <label className="file-pick">
          open a bundle…
          <input
            type="file"
            accept=".json,application/json"
            aria-label="Syncscope bundle to open"
            onChange={(event) => {
              const file = event.target.files?.[0]
              event.target.value = ''
              if (file) void openBundleFile(file)
            }}
          />
        </label>
        {opened && session && !isBundle && (
          <button type="button" className="secondary" onClick={() => void exportBundle(opened.logId, session)}>
            Export bundle
          </button>
        )}
      </div>
      {!opened && !busy && (
        <p className="muted">
          {session
            ? 'Read the shape’s log to travel through it, or open a repro bundle.'
            : 'Start a shape to travel through its log, or open a repro bundle (read-only).'}
        </p>
      )}
      {busy && <p className="muted">Reading the log…</p>}
      <ErrorBox error={openError ?? exportError} />
      {opened && (
        <>
          <p className="log-source" data-testid="log-source">
            <span className="badge">{SOURCE_NAMES[opened.source.kind]}</span> <code>{opened.definition.table}</code> ·
            handle <code>{opened.handle ?? '?'}</code> · {opened.total} messages,{' '}
            {opened.complete ? 'the log ends at' : 'read up to'} <code>{opened.end}</code>
            {opened.bundle && ` · made ${opened.bundle.createdAt} by ${opened.bundle.createdBy}`}
          </p>
          {opened.notes.map((note, index) => (
            <p key={index} className="muted">
              {note}
            </p>
          ))}
          <ShapeAtView key={opened.logId} info={opened} />
        </>
      )}
      <div className="time-travel-tools">
        <VerifyPanel
          sessionRecording={session && !isBundle ? session.recording : null}
          bundleLogId={isBundle && opened?.bundle?.recording ? opened.logId : null}
        />
        <TxidPanel source={opened ? { kind: 'opened', logId: opened.logId } : null} local={session?.local ?? false} />
      </div>
    </div>
  )
}
