import { useState, type DragEvent } from 'react'
import type { DoctorReport, TimelineEntry } from '../../../shared/contract/doctor'
import { ErrorBox } from '../../components/ErrorBox'
import { useCallMutation } from '../../hooks'
import { FindingView } from '../conformance/ConformancePage'
import '../conformance/conformance.css'
import './doctor.css'
import { workbenchSessions } from './workbench-sessions'

interface Loaded {
  name: string
  text: string
}

function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }))
  const link = document.createElement('a')
  link.href = url
  link.download = name
  link.click()
  setTimeout(() => URL.revokeObjectURL(url), 1_000)
}

const short = (value: string | null) => (value === null ? '' : value.length > 18 ? `${value.slice(0, 15)}…` : value)
const ms = (value: number | null) =>
  value === null ? '–' : value >= 1_000 ? `${(value / 1000).toFixed(1)} s` : `${value} ms`

function TimelineRow({ entry }: { entry: TimelineEntry }) {
  const { request, response } = entry
  return (
    <tr data-testid={`request-${entry.n}`} className={entry.status === null || entry.status >= 400 ? 'failed' : ''}>
      <td>#{entry.n}</td>
      <td className="timing">+{(entry.atMs / 1000).toFixed(1)} s</td>
      <td>
        <code>{request.offset}</code> {request.handle && <code title={request.handle}>{short(request.handle)}</code>}{' '}
        {request.cursor && <span className="muted">cursor {request.cursor}</span>}{' '}
        {request.live !== 'off' && <span className="badge">{request.live}</span>}{' '}
        {request.cacheBuster && <span className="muted">cache-buster</span>}
      </td>
      <td>{entry.status ?? <span className="badge error">{entry.error ?? 'no response'}</span>}</td>
      <td>
        {response.handle && <code title={response.handle}>{short(response.handle)}</code>}{' '}
        {response.offset && <code>{response.offset}</code>}{' '}
        {response.cursor && <span className="muted">cursor {response.cursor}</span>}{' '}
        {response.changes > 0 && <span>{response.changes} changes</span>}{' '}
        {response.upToDate && <span className="badge ok">up-to-date</span>}{' '}
        {response.mustRefetch && <span className="badge error">must-refetch</span>}
      </td>
      <td>
        {entry.cache.status !== 'unknown' && (
          <span className={`badge ${entry.cache.status === 'miss' ? '' : 'warn'}`} title={entry.cache.evidence ?? ''}>
            {entry.cache.status}
          </span>
        )}
      </td>
      <td className="timing">{ms(entry.endMs)}</td>
    </tr>
  )
}

function ReportView({ report }: { report: DoctorReport }) {
  const errors = report.findings.filter((finding) => finding.severity === 'error').length
  return (
    <>
      <section className="panel" aria-label="Diagnoses">
        <p data-testid="doctor-summary">
          <code>{report.source.name}</code> ({report.source.kind === 'har' ? 'HAR' : 'Syncscope recording'}
          {report.source.creator ? ` from ${report.source.creator}` : ''}) · {report.timeline.length} shape requests
          {report.ignored > 0 ? `, ${report.ignored} other requests left out` : ''} ·{' '}
          {report.findings.length === 0 ? 'no problem found' : `${report.findings.length} diagnoses (${errors} errors)`}
        </p>
        {report.findings.map((finding, index) => (
          <FindingView key={`${finding.id}-${index}`} finding={finding} />
        ))}
        {report.notes.length > 0 && (
          <ul className="notes" aria-label="Notes">
            {report.notes.map((note) => (
              <li key={note}>{note}</li>
            ))}
          </ul>
        )}
      </section>
      <section className="panel" aria-label="Timeline">
        <h2>Timeline</h2>
        <table className="grid doctor-timeline">
          <thead>
            <tr>
              <th>#</th>
              <th>sent</th>
              <th>asked (offset, handle, cursor)</th>
              <th>status</th>
              <th>answer</th>
              <th>cache</th>
              <th>took</th>
            </tr>
          </thead>
          <tbody>
            {report.timeline.map((entry) => (
              <TimelineRow key={entry.n} entry={entry} />
            ))}
          </tbody>
        </table>
      </section>
    </>
  )
}

/** The sync doctor: a HAR file or a workbench session in, a timeline and diagnoses out, and a redacted bundle to share. */
export function DoctorPage() {
  const analyze = useCallMutation('doctor.analyze')
  const redact = useCallMutation('doctor.redact')
  const [loaded, setLoaded] = useState<Loaded | null>(null)
  const [dragging, setDragging] = useState(false)
  const [readError, setReadError] = useState<Error | null>(null)
  const sessions = workbenchSessions()

  const open = (next: Loaded) => {
    setLoaded(next)
    redact.reset()
    analyze.mutate(next)
  }
  const openFile = (file: File | undefined) => {
    if (!file) return
    setReadError(null)
    file.text().then(
      (text) => open({ name: file.name, text }),
      (error: Error) => setReadError(new Error(`cannot read ${file.name}: ${error.message}`))
    )
  }
  const onDrop = (event: DragEvent) => {
    event.preventDefault()
    setDragging(false)
    openFile(event.dataTransfer.files[0])
  }
  const exportBundle = () => {
    if (!loaded) return
    redact.mutate(loaded, { onSuccess: (bundle) => download(bundle.name, bundle.text) })
  }

  return (
    <div className="page doctor-page">
      <h1>Sync doctor</h1>
      <p className="muted">
        Why does a sync misbehave? Drop a HAR file (DevTools → Network → “Save all as HAR”, or{' '}
        <code>syncscope tap</code>) or pick a session of the shape workbench: the doctor lays out the requests, handles,
        offsets, cursors and cache answers, and names what went wrong — with the requests that show it, the rule and the
        fix.
      </p>
      <div className="panel doctor-inputs">
        <div
          className={`drop-zone${dragging ? ' dragging' : ''}`}
          data-testid="drop-zone"
          onDragOver={(event) => {
            event.preventDefault()
            setDragging(true)
          }}
          onDragLeave={() => setDragging(false)}
          onDrop={onDrop}
        >
          Drop a <code>.har</code> file or a Syncscope recording here, or{' '}
          <label className="file-pick">
            choose a file
            <input
              type="file"
              accept=".har,.json,application/json"
              aria-label="HAR file or recording"
              onChange={(event) => openFile(event.target.files?.[0])}
            />
          </label>
        </div>
        <div className="workbench-sessions" aria-label="Workbench sessions">
          {sessions.length === 0 ? (
            <p className="muted">No workbench session yet: start a shape in the Shape workbench, then come back.</p>
          ) : (
            sessions.map((session) => (
              <div key={session.id} className="toolbar">
                <span>
                  Workbench: <code>{session.label}</code> at {new Date(session.startedAt).toLocaleTimeString()} (
                  {session.session.summary?.requests ?? 0} requests)
                </span>
                <button
                  type="button"
                  onClick={() =>
                    void session.session
                      .recording()
                      .then(
                        (recording) =>
                          open({ name: `workbench-${session.label}.json`, text: JSON.stringify(recording) }),
                        setReadError
                      )
                  }
                >
                  Diagnose
                </button>
                <button
                  type="button"
                  className="secondary"
                  onClick={() =>
                    void session.session
                      .recording()
                      .then(
                        (recording) => download(`workbench-${session.label}.json`, JSON.stringify(recording, null, 1)),
                        setReadError
                      )
                  }
                >
                  Save recording
                </button>
              </div>
            ))
          )}
        </div>
        {loaded && (
          <div className="toolbar">
            <button type="button" className="secondary" onClick={exportBundle} disabled={redact.isPending}>
              Export redacted bundle
            </button>
            <span className="muted">tokens, cookies and secrets masked, to attach to a bug report</span>
          </div>
        )}
      </div>
      <ErrorBox error={readError ?? analyze.error ?? redact.error} />
      {analyze.isPending && <p className="muted">Reading {loaded?.name}…</p>}
      {analyze.data && !analyze.isPending && <ReportView report={analyze.data} />}
    </div>
  )
}
