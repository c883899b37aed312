import { useEffect, useState } from 'react'
import type { TableInfo } from '../../../shared/contract/db'
import type { WriteKind, WriteReport } from '../../../shared/contract/shapes-workbench'
import { api, type ApiError } from '../../api'
import { ErrorBox } from '../../components/ErrorBox'

const KINDS: WriteKind[] = ['insert', 'update', 'delete']

type Totals = WriteReport

const add = (totals: Totals, report: WriteReport): Totals => ({
  applied: {
    insert: totals.applied.insert + report.applied.insert,
    update: totals.applied.update + report.applied.update,
    delete: totals.applied.delete + report.applied.delete
  },
  failed: totals.failed + report.failed,
  errors: [...new Set([...report.errors, ...totals.errors])].slice(0, 3)
})

const EMPTY: Totals = { applied: { insert: 0, update: 0, delete: 0 }, failed: 0, errors: [] }

/** N random inserts/updates/deletes per second on a table, to watch them flow through a shape. */
export function WriteGenerator({ tables }: { tables: TableInfo[] }) {
  const [tableName, setTableName] = useState('')
  const [perSecond, setPerSecond] = useState(2)
  const [kinds, setKinds] = useState<WriteKind[]>(['update'])
  const [running, setRunning] = useState(false)
  const [totals, setTotals] = useState<Totals>(EMPTY)
  const [error, setError] = useState<ApiError | null>(null)
  const table = tables.find((candidate) => candidate.qualifiedName === tableName)

  useEffect(() => {
    if (!running || !table) return
    let busy = false
    const timer = setInterval(() => {
      if (busy) return
      busy = true
      api
        .call('shapesWorkbench.randomWrites', { schema: table.schema, table: table.name, count: perSecond, kinds })
        .then((report) => setTotals((current) => add(current, report)))
        .catch((failure: ApiError) => {
          setError(failure)
          setRunning(false)
        })
        .finally(() => (busy = false))
    }, 1_000)
    return () => clearInterval(timer)
  }, [running, table, perSecond, kinds])

  return (
    <section className="panel write-generator" aria-label="Write generator">
      <h2>Write generator</h2>
      <div className="compose-row">
        <label className="field">
          <span>table</span>
          <select aria-label="generator table" value={tableName} onChange={(event) => setTableName(event.target.value)}>
            <option value="">pick a table…</option>
            {tables.map((candidate) => (
              <option key={candidate.qualifiedName} value={candidate.qualifiedName}>
                {candidate.qualifiedName}
              </option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>writes per second</span>
          <input
            aria-label="writes per second"
            type="number"
            min={1}
            max={100}
            value={perSecond}
            onChange={(event) => setPerSecond(Math.min(100, Math.max(1, Number(event.target.value) || 1)))}
          />
        </label>
      </div>
      <div className="toolbar">
        {KINDS.map((kind) => (
          <label key={kind}>
            <input
              type="checkbox"
              checked={kinds.includes(kind)}
              onChange={(event) =>
                setKinds(event.target.checked ? [...kinds, kind] : kinds.filter((other) => other !== kind))
              }
            />{' '}
            {kind}
          </label>
        ))}
      </div>
      <div className="toolbar">
        <button
          type="button"
          disabled={!table || kinds.length === 0}
          onClick={() => (setError(null), setRunning(!running))}
        >
          {running ? 'Stop writing' : 'Start writing'}
        </button>
        <span className="count" data-testid="generator-totals">
          {totals.applied.insert} inserted, {totals.applied.update} updated, {totals.applied.delete} deleted,{' '}
          {totals.failed} failed
        </span>
      </div>
      {totals.errors.map((message) => (
        <p key={message} className="warn">
          {message}
        </p>
      ))}
      <ErrorBox error={error} />
    </section>
  )
}
