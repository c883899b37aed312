import { useState, type KeyboardEvent } from 'react'
import type { QueryResult } from '../../../shared/contract/db'
import { ErrorBox } from '../../components/ErrorBox'
import { useCall, useCallMutation } from '../../hooks'
import { ValueTable } from '../../components/ValueTable'

type Failure = Extract<QueryResult, { ok: false }>
type Success = Extract<QueryResult, { ok: true }>

function PostgresErrorView({ sql, failure }: { sql: string; failure: Failure }) {
  const { error } = failure
  const position = error.position
  return (
    <div className="pg-error" role="alert" data-testid="sql-error">
      <strong>
        ERROR{error.code ? ` ${error.code}` : ''}: {error.message}
      </strong>
      {position !== null && (
        <pre className="error-position">
          {sql.slice(0, position - 1)}
          <mark>{sql.slice(position - 1, position) || ' '}</mark>
          {sql.slice(position)}
          {'\n'}at character {position}
        </pre>
      )}
      {error.detail && <p>Detail: {error.detail}</p>}
      {error.hint && <p>Hint: {error.hint}</p>}
    </div>
  )
}

function ResultsView({ success }: { success: Success }) {
  return (
    <div data-testid="sql-results">
      {success.results.map((result, index) => (
        <div key={index} className="statement-result">
          <p className="summary">
            {result.command}
            {result.rowCount !== null && ` — ${result.rowCount} row${result.rowCount === 1 ? '' : 's'}`}
            {result.truncated && ' (first 1,000 shown)'}
          </p>
          {result.fields.length > 0 && (
            <div className="scroll">
              <ValueTable
                columns={result.fields.map((field) => ({ name: field.name, note: field.type }))}
                rows={result.rows.map((row, rowIndex) => ({ key: rowIndex, cells: row }))}
                compact={false}
              />
            </div>
          )}
        </div>
      ))}
      <p className="timing">{success.durationMs.toFixed(1)} ms</p>
    </div>
  )
}

export function SqlConsole() {
  const [sql, setSql] = useState('SELECT id, title, status FROM issues ORDER BY id LIMIT 20;')
  const [ranSql, setRanSql] = useState('')
  const run = useCallMutation('db.query', ['db.history'])
  const history = useCall('db.history', {})
  const execute = () => {
    if (!sql.trim()) return
    setRanSql(sql)
    run.mutate({ sql })
  }
  const onKeyDown = (event: KeyboardEvent) => {
    if ((event.ctrlKey || event.metaKey) && event.key === 'Enter') {
      event.preventDefault()
      execute()
    }
  }
  return (
    <div className="page sql-console">
      <h1>SQL console</h1>
      <textarea
        aria-label="SQL"
        className="sql-input"
        value={sql}
        spellCheck={false}
        onChange={(event) => setSql(event.target.value)}
        onKeyDown={onKeyDown}
        rows={6}
      />
      <div className="toolbar">
        <button type="button" onClick={execute} disabled={run.isPending}>
          {run.isPending ? 'Running…' : 'Run (Ctrl+Enter)'}
        </button>
      </div>
      <ErrorBox error={run.error} />
      {run.data && !run.data.ok && <PostgresErrorView sql={ranSql} failure={run.data} />}
      {run.data?.ok && <ResultsView success={run.data} />}
      <section aria-label="History" className="history">
        <h2>History</h2>
        <ul>
          {history.data?.map((entry) => (
            <li key={entry.at + entry.sql} className={entry.ok ? 'ok' : 'failed'}>
              <button type="button" className="link" onClick={() => setSql(entry.sql)} title="Load into the editor">
                <code>{entry.sql.length > 120 ? `${entry.sql.slice(0, 120)}…` : entry.sql}</code>
              </button>
              <span className="summary">{entry.summary}</span>
              <time>{new Date(entry.at).toLocaleTimeString()}</time>
            </li>
          ))}
        </ul>
      </section>
    </div>
  )
}
