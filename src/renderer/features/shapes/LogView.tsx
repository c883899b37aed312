import { useState } from 'react'
import { isChangeMessage, type Message, type RecordEntry } from '../../../shared/shape-client'
import { clockTime } from './clock'
import type { WorkbenchSession } from './session'

type Filter = 'all' | 'insert' | 'update' | 'delete' | 'control'
const FILTERS: Filter[] = ['all', 'insert', 'update', 'delete', 'control']
const SHOWN = 2_000

type Shown = Extract<RecordEntry, { type: 'message' | 'note' }>

const kindOf = (message: Message): Exclude<Filter, 'all'> => (isChangeMessage(message) ? message.headers.operation : 'control')

function matches(entry: Shown, filter: Filter): boolean {
  if (filter === 'all') return true
  return entry.type === 'message' && kindOf(entry.message) === filter
}

function Detail({ message, session }: { message: Message; session: WorkbenchSession }) {
  if (!isChangeMessage(message)) {
    const { control, event, ...rest } = message.headers as Record<string, unknown>
    return (
      <>
        <strong>{String(control ?? event)}</strong> {Object.keys(rest).length > 0 && <code>{JSON.stringify(rest)}</code>}
      </>
    )
  }
  const before = session.before.get(message)
  if (message.headers.operation === 'update' && before) {
    return (
      <span className="diff">
        {Object.entries(message.value)
          .filter(([column, value]) => before[column] !== value)
          .map(([column, value]) => (
            <span key={column}>
              {column}: <del>{before[column] ?? 'NULL'}</del> → <ins>{value ?? 'NULL'}</ins>{' '}
            </span>
          ))}
      </span>
    )
  }
  return <code>{JSON.stringify(message.value)}</code>
}

/** The shape log as received: change and control messages in order, with notes (retries, fallbacks) between them. */
export function LogView({ session }: { session: WorkbenchSession }) {
  const [filter, setFilter] = useState<Filter>('all')
  const entries = session.recorder.entries.filter((entry): entry is Shown => entry.type === 'message' || entry.type === 'note')
  const shown = entries.filter((entry) => matches(entry, filter)).slice(-SHOWN)
  return (
    <div className="log-view">
      <div className="toolbar" role="group" aria-label="Filter by operation">
        {FILTERS.map((candidate) => (
          <button key={candidate} type="button" className={candidate === filter ? '' : 'secondary'} aria-pressed={candidate === filter} onClick={() => setFilter(candidate)}>
            {candidate}
          </button>
        ))}
        <span className="count">{shown.length} shown</span>
      </div>
      <div className="scroll">
        <table className="grid compact" data-testid="log">
          <thead>
            <tr>
              <th>time</th>
              <th>offset</th>
              <th>op</th>
              <th>key</th>
              <th>value</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((entry, index) =>
              entry.type === 'note' ? (
                <tr key={index} className={`note ${entry.level}`}>
                  <td>{clockTime(entry.at)}</td>
                  <td colSpan={4}>{entry.text}</td>
                </tr>
              ) : (
                <tr key={index} className={`op-${kindOf(entry.message)}`} data-op={kindOf(entry.message)}>
                  <td>{clockTime(entry.at)}</td>
                  <td className="mono">{entry.offset ?? ''}</td>
                  <td>{kindOf(entry.message)}</td>
                  <td className="mono">{isChangeMessage(entry.message) ? entry.message.key : ''}</td>
                  <td>
                    <Detail message={entry.message} session={session} />
                  </td>
                </tr>
              )
            )}
          </tbody>
        </table>
      </div>
    </div>
  )
}
