import { useState } from 'react'
import { isChangeMessage, isEventMessage, type Message, type RecordEntry } from '../../../shared/shape-client'
import { clockTime } from './clock'
import type { WorkbenchSession } from './session'

type Filter = 'all' | 'insert' | 'update' | 'delete' | 'moves' | 'control'
const FILTERS: Filter[] = ['all', 'insert', 'update', 'delete', 'moves', 'control']
const SHOWN = 2_000

type Shown = Extract<RecordEntry, { type: 'message' | 'note' }>

type Kind = 'insert' | 'update' | 'delete' | 'move-in' | 'move-out' | 'event' | 'control'

function kindOf(message: Message): Kind {
  if (isChangeMessage(message)) return message.headers.operation
  if (!isEventMessage(message)) return 'control'
  const { event } = message.headers
  return event === 'move-in' || event === 'move-out' ? event : 'event'
}

/** A subquery shape's move: its event, or a row its move-in query read. */
const isMove = (message: Message): boolean =>
  isChangeMessage(message) ? message.headers.is_move_in === true : isEventMessage(message)

function matches(entry: Shown, filter: Filter): boolean {
  if (filter === 'all') return true
  if (entry.type !== 'message') return false
  if (filter === 'moves') return isMove(entry.message)
  const kind = kindOf(entry.message)
  return kind === filter || (filter === 'control' && kind === 'event')
}

function MoveDetail({
  message,
  session
}: {
  message: Extract<Message, { headers: { event: string } }>
  session: WorkbenchSession
}) {
  const { event, patterns = [], txids, ...rest } = message.headers
  const removed = session.movedOut.get(message)
  return (
    <>
      <strong>{event}</strong> {patterns.length} pattern{patterns.length === 1 ? '' : 's'}
      {txids && ` · transaction ${txids.join(', ')}`}
      {event === 'move-out' && (
        <span data-testid="moved-out">
          {' '}
          · removed {removed?.length ?? 0} row{removed?.length === 1 ? '' : 's'} here (no delete is sent)
        </span>
      )}
      {event === 'move-in' && ' · the rows that enter follow, marked move-in'}{' '}
      <code title={JSON.stringify(patterns)}>
        {patterns.map((pattern) => `${pattern.pos}:${pattern.value.slice(0, 8)}`).join(' ')}
      </code>
      {Object.keys(rest).length > 0 && <code> {JSON.stringify(rest)}</code>}
    </>
  )
}

function Detail({ message, session }: { message: Message; session: WorkbenchSession }) {
  if (isEventMessage(message)) return <MoveDetail message={message} session={session} />
  if (!isChangeMessage(message)) {
    const { control, event, ...rest } = message.headers as Record<string, unknown>
    return (
      <>
        <strong>{String(control ?? event)}</strong>{' '}
        {Object.keys(rest).length > 0 && <code>{JSON.stringify(rest)}</code>}
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
  const entries = session.recorder.entries.filter(
    (entry): entry is Shown => entry.type === 'message' || entry.type === 'note'
  )
  const shown = entries.filter((entry) => matches(entry, filter)).slice(-SHOWN)
  return (
    <div className="log-view">
      <div className="toolbar" role="group" aria-label="Filter by operation">
        {FILTERS.map((candidate) => (
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
                <tr
                  key={index}
                  className={`op-${kindOf(entry.message)}`}
                  data-op={kindOf(entry.message)}
                  data-move={isMove(entry.message) || undefined}
                >
                  <td>{clockTime(entry.at)}</td>
                  <td className="mono">{entry.offset ?? ''}</td>
                  <td>
                    {kindOf(entry.message)}
                    {isChangeMessage(entry.message) && entry.message.headers.is_move_in && (
                      <span className="badge move">move-in</span>
                    )}
                  </td>
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
