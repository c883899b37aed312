import { useState } from 'react'
import { clockTime } from './clock'
import { LOG_FILTERS, type LogDetail, type LogFilter, type LogRow } from './engine/log-rows'
import type { WorkbenchSession } from './session'
import { SearchBox, ShownCount, VirtualTable } from './VirtualTable'
import { useListView } from './use-view'

const ROW_HEIGHT = 24

function Detail({ detail }: { detail: LogDetail }) {
  switch (detail.type) {
    case 'move':
      return (
        <>
          <strong>{detail.event}</strong> {detail.patterns} pattern{detail.patterns === 1 ? '' : 's'}
          {detail.txids && ` · transaction ${detail.txids}`}
          {detail.removed !== null && (
            <span data-testid="moved-out">
              {' '}
              · removed {detail.removed} row{detail.removed === 1 ? '' : 's'} here (no delete is sent)
            </span>
          )}
          {detail.event === 'move-in' && ' · the rows that enter follow, marked move-in'}{' '}
          <code title={detail.patternsJson}>{detail.patternsShort}</code>
          {detail.rest && <code> {detail.rest}</code>}
        </>
      )
    case 'control':
      return (
        <>
          <strong>{detail.name}</strong> {detail.rest && <code>{detail.rest}</code>}
        </>
      )
    case 'diff':
      return (
        <span className="diff">
          {detail.changes.map((change) => (
            <span key={change.column}>
              {change.column}: <del>{change.before ?? 'NULL'}</del> → <ins>{change.after ?? 'NULL'}</ins>{' '}
            </span>
          ))}
        </span>
      )
    case 'value':
      return <code>{detail.json}</code>
  }
}

function LogLine({ row }: { row: LogRow }) {
  if (row.type === 'note')
    return (
      <tr className={`note ${row.level}`}>
        <td>{clockTime(row.at)}</td>
        <td colSpan={4} title={row.text}>
          {row.text}
        </td>
      </tr>
    )
  return (
    <tr className={`op-${row.kind}`} data-op={row.kind} data-move={row.move || undefined}>
      <td>{clockTime(row.at)}</td>
      <td className="mono">{row.offset}</td>
      <td>
        {row.kind}
        {row.moveIn && <span className="badge move">move-in</span>}
      </td>
      <td className="mono" title={row.key}>
        {row.key}
      </td>
      <td>
        <Detail detail={row.detail} />
      </td>
    </tr>
  )
}

/**
 * The shape log as received: change and control messages in order, with notes (retries, fallbacks) between them.
 * The worker keeps the newest entries (the recorder's bound) and filters and searches them; the page draws what is in view.
 */
export function LogView({ session }: { session: WorkbenchSession }) {
  const [filter, setFilter] = useState<LogFilter>('all')
  const [search, setSearch] = useState('')
  const { range, view } = useListView(session, ROW_HEIGHT, (rows) => ({ kind: 'log', filter, search, ...rows }))
  return (
    <div className="log-view">
      <div className="toolbar" role="group" aria-label="Filter by operation">
        {LOG_FILTERS.map((candidate) => (
          <button
            key={candidate}
            type="button"
            className={candidate === filter ? '' : 'secondary'}
            aria-pressed={candidate === filter}
            onClick={() => setFilter(candidate)}
          >
            {candidate}
          </button>
        ))}
        <SearchBox label="search the log" value={search} onChange={setSearch} />
        <ShownCount testId="log-count" view={view} />
      </div>
      <VirtualTable
        testId="log"
        range={range}
        view={view}
        rowHeight={ROW_HEIGHT}
        columns={['time', 'offset', 'op', 'key', 'value']}
        render={(row) => <LogLine key={row.seq} row={row} />}
      />
    </div>
  )
}
