import { useState, type FormEvent } from 'react'
import type { TableInfo } from '../../../shared/contract/db'
import { ErrorBox } from '../../components/ErrorBox'
import { useCall, useCallMutation, useInvalidateOn } from '../../hooks'

const REFRESHED_BY_DB_CHANGES = ['db.tables', 'db.status'] as const

function StatusPanel() {
  const status = useCall('db.status', {})
  const connect = useCallMutation('db.connect', ['db.status', 'db.tables'])
  const [target, setTarget] = useState('')
  const onSubmit = (event: FormEvent) => {
    event.preventDefault()
    connect.mutate({ database: target.trim() || 'embedded' })
  }
  const s = status.data
  return (
    <section className="panel" aria-label="Connection">
      <h2>Connection</h2>
      <ErrorBox error={status.error} />
      {s && (
        <dl className="facts">
          <dt>State</dt>
          <dd>
            <span className={`badge ${s.state}`} data-testid="db-state">
              {s.state}
            </span>
          </dd>
          <dt>Database</dt>
          <dd>{s.kind === 'embedded' ? 'embedded Postgres' : 'external Postgres'}</dd>
          <dt>URL</dt>
          <dd>
            <code>{s.url}</code>
          </dd>
          <dt>Server</dt>
          <dd>PostgreSQL {s.serverVersion ?? '?'}</dd>
          <dt>wal_level</dt>
          <dd className={s.walLevel === 'logical' ? '' : 'warn'}>
            {s.walLevel ?? '?'}
            {s.walLevel !== 'logical' && s.walLevel && ' — the shape server needs wal_level=logical'}
          </dd>
          {s.dataDir && (
            <>
              <dt>Data folder</dt>
              <dd>
                <code>{s.dataDir}</code>
              </dd>
            </>
          )}
          {s.error && (
            <>
              <dt>Error</dt>
              <dd className="warn">{s.error}</dd>
            </>
          )}
        </dl>
      )}
      <form className="inline-form" onSubmit={onSubmit}>
        <label>
          Connect to
          <input
            value={target}
            onChange={(event) => setTarget(event.target.value)}
            placeholder="postgres://user:password@host:5432/db — empty for the embedded database"
            aria-label="Database URL"
          />
        </label>
        <button type="submit" disabled={connect.isPending}>
          {connect.isPending ? 'Connecting…' : 'Connect'}
        </button>
      </form>
      <ErrorBox error={connect.error} />
    </section>
  )
}

function TableCard({ table }: { table: TableInfo }) {
  return (
    <article className="table-card" aria-label={`table ${table.qualifiedName}`}>
      <header>
        <h3>{table.qualifiedName}</h3>
        <span className="count" data-testid={`rows-${table.name}`}>
          {table.rowCount.toLocaleString('en-US')} rows
        </span>
      </header>
      <table className="grid compact">
        <thead>
          <tr>
            <th>Column</th>
            <th>Type</th>
            <th>Null</th>
            <th>Default</th>
          </tr>
        </thead>
        <tbody>
          {table.columns.map((column) => (
            <tr key={column.name}>
              <td>
                {column.name}
                {column.isPrimaryKey && (
                  <span className="pk" title="primary key">
                    {' '}
                    PK
                  </span>
                )}
              </td>
              <td>
                <code>{column.type}</code>
              </td>
              <td>{column.nullable ? 'yes' : 'no'}</td>
              <td>
                <code>{column.default ?? ''}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </article>
  )
}

export function DatabaseView() {
  useInvalidateOn('db.changed', REFRESHED_BY_DB_CHANGES)
  const tables = useCall('db.tables', {})
  return (
    <div className="page">
      <h1>Database</h1>
      <StatusPanel />
      <section aria-label="Tables">
        <h2>Tables {tables.data && <small>({tables.data.length})</small>}</h2>
        <ErrorBox error={tables.error} />
        {tables.isPending && <p>Loading tables…</p>}
        <div className="table-cards">
          {tables.data?.map((table) => (
            <TableCard key={table.qualifiedName} table={table} />
          ))}
        </div>
      </section>
    </div>
  )
}
