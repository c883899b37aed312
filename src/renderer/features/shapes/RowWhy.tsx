import { useEffect, useRef } from 'react'
import type { SubqueryAdmission } from '../../../shared/contract/shapes-workbench'
import type { Row } from '../../../shared/shape-client'
import { ErrorBox } from '../../components/ErrorBox'
import { ValueTable } from '../../components/ValueTable'
import { useCall } from '../../hooks'
import { disjunctsOf, shortHash } from './membership-view'
import type { WorkbenchSession } from './session'
import { useSessionView } from './use-view'

function Admission({ admission }: { admission: SubqueryAdmission }) {
  const values = admission.columns
    .map(
      (column) =>
        `${column.name} = ${column.value ?? 'NULL'}${column.inShape ? '' : ' (not among the shape’s columns)'}`
    )
    .join(', ')
  const found = admission.innerRows.length > 0
  const verdict = admission.negated
    ? found
      ? `these ${admission.innerTable} rows select ${values}: this test excludes the row`
      : `no ${admission.innerTable} row selects ${values}: this test admits the row`
    : found
      ? `admitted by ${admission.innerRows.length}${admission.more ? '+' : ''} ${admission.innerTable} row(s) selecting ${values}`
      : `no ${admission.innerTable} row selects ${values} now: this test does not admit the row`
  const columns = Object.keys(admission.innerRows[0] ?? {})
  return (
    <div className="admission" data-testid="admission">
      <code>{admission.test}</code>
      <p className={found !== admission.negated ? 'ok' : 'muted'}>{verdict}</p>
      {found && (
        <ValueTable
          columns={columns.map((name) => ({ name }))}
          rows={admission.innerRows.map((row, index) => ({
            key: index,
            cells: columns.map((name) => row[name] ?? null)
          }))}
          label="Admitting rows"
          testId="admitting-rows"
        />
      )}
    </div>
  )
}

function AdmittedBy({ session, row }: { session: WorkbenchSession; row: Row }) {
  const { where, params } = session.config.definition
  const admitted = useCall('shapesWorkbench.admittedBy', { where, params, row }, { staleTime: 0 })
  if (admitted.error) return <ErrorBox error={admitted.error} />
  if (!admitted.data) return <p className="muted">Reading the inner rows…</p>
  return (
    <>
      {admitted.data.subqueries.map((admission, index) => (
        <Admission key={index} admission={admission} />
      ))}
    </>
  )
}

/**
 * Why a row is in a subquery shape: its tags as the where's disjuncts (which positions hold, per the server's
 * active_conditions) and, on the app's own Postgres, the inner rows that admit it now.
 */
export function RowWhy({ session, rowKey, onClose }: { session: WorkbenchSession; rowKey: string; onClose(): void }) {
  const view = useSessionView(session, { kind: 'row', key: rowKey })
  const membership = view?.membership ?? null
  const present = view?.present ?? false
  const panel = useRef<HTMLElement>(null)
  // The panel opens under the rows table: bring it into view (the table alone fills a screen).
  // (A block body: in current Chromium scrollIntoView returns a promise, which React would call as the cleanup.)
  useEffect(() => {
    void panel.current?.scrollIntoView({ block: 'nearest' })
  }, [])
  return (
    <section className="row-why" aria-label="Why this row" data-testid="row-why" ref={panel}>
      <div className="toolbar">
        <strong className="mono">{rowKey}</strong>
        <button type="button" className="secondary small" onClick={onClose}>
          Close
        </button>
      </div>
      {!view && <p className="muted">Reading the row…</p>}
      {view && !present && <p className="muted">The row left the shape.</p>}
      {present && !membership && <p className="muted">This shape’s rows carry no tags: its where has no subquery.</p>}
      {membership && (
        <table className="grid compact" data-testid="row-tags">
          <thead>
            <tr>
              <th>disjunct</th>
              <th>positions (tag slot → condition)</th>
              <th>holds</th>
            </tr>
          </thead>
          <tbody>
            {disjunctsOf(membership).map((disjunct) => (
              <tr key={disjunct.number} data-holds={disjunct.holds}>
                <td>#{disjunct.number}</td>
                <td>
                  {disjunct.slots.map((slot) => (
                    <span
                      key={slot.pos}
                      className={`slot ${slot.active ? 'ok' : 'off'}`}
                      title={slot.hash ?? 'a condition without subquery'}
                    >
                      {slot.pos}: {slot.kind === 'plain' ? 'plain condition' : shortHash(slot.hash ?? '')} →{' '}
                      {String(slot.active)}{' '}
                    </span>
                  ))}
                </td>
                <td>{disjunct.holds ? 'yes' : 'no'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {present && membership && session.config.appDatabase && <AdmittedBy session={session} row={view?.row ?? {}} />}
      {present && membership && !session.config.appDatabase && (
        <p className="muted">The inner rows are read from the app’s own Postgres: not for a custom URL target.</p>
      )}
    </section>
  )
}
