import { useState } from 'react'
import type { VerifyReport } from '../../../../shared/contract/timetravel'
import { ErrorBox } from '../../../components/ErrorBox'
import { api } from '../../../api'
import { fileText } from './file-text'
import { useTask } from './use-task'
import { VerifyReportView } from './VerifyReportView'

type Input = { kind: 'session' } | { kind: 'file'; file: File } | { kind: 'bundle' }

/**
 * The Verify button: a client's rows (this workbench session's, a HAR or `syncscope tap` recording the person picks,
 * or an opened bundle's) compared with the server's log and with Postgres.
 */
export function VerifyPanel({
  sessionRecording,
  bundleLogId
}: {
  /** This session's recording, when there is a session. */
  sessionRecording: (() => Promise<{ name: string; text: string }>) | null
  bundleLogId: string | null
}) {
  const [database, setDatabase] = useState('')
  const { result: report, error, busy, run } = useTask<VerifyReport>()
  const verify = (input: Input) =>
    run(async () => {
      const recording =
        input.kind === 'session' && sessionRecording
          ? await sessionRecording()
          : input.kind === 'file'
            ? await fileText(input.file)
            : undefined
      return api.call('timetravel.verify', {
        recording,
        bundleLogId: input.kind === 'bundle' ? (bundleLogId ?? undefined) : undefined,
        databaseUrl: database.trim() || null
      })
    })
  return (
    <section className="panel verify-panel" aria-label="Verify">
      <h3>Verify against Postgres</h3>
      <div className="toolbar">
        {sessionRecording && (
          <button type="button" disabled={busy} onClick={() => void verify({ kind: 'session' })}>
            Verify
          </button>
        )}
        {bundleLogId && (
          <button type="button" disabled={busy} onClick={() => void verify({ kind: 'bundle' })}>
            Verify the bundle
          </button>
        )}
        <label className="file-pick">
          a HAR or recording file…
          <input
            type="file"
            accept=".har,.json,application/json"
            aria-label="HAR or recording to verify"
            disabled={busy}
            onChange={(event) => {
              const file = event.target.files?.[0]
              event.target.value = ''
              if (file) void verify({ kind: 'file', file })
            }}
          />
        </label>
        <input
          aria-label="Postgres URL"
          className="wide"
          placeholder={
            bundleLogId ? "Postgres URL (default: the bundle's rows)" : "Postgres URL (default: the app's database)"
          }
          value={database}
          onChange={(event) => setDatabase(event.target.value)}
        />
      </div>
      {busy && <p className="muted">Verifying…</p>}
      <ErrorBox error={error} />
      {report && <VerifyReportView report={report} />}
    </section>
  )
}
