import { useState } from 'react'
import { maskUrl, type SubsetMethod } from '../../../shared/shape-client'
import type { SubsetView } from './engine/protocol'
import type { WorkbenchSession } from './session'
import { useSessionView } from './use-view'
import {
  EMPTY_SUBSET_FORM,
  MAX_URL_LENGTH,
  parseSubsetForm,
  previewSubsetRequest,
  subsetFailureOf,
  subsetOf,
  type FieldErrors,
  type SubsetFailure,
  type SubsetForm
} from './subset-form'
import { ValueTable } from '../../components/ValueTable'

type Snapshot = SubsetView['snapshot']

function FieldError({ field, errors }: { field: keyof FieldErrors; errors: FieldErrors }) {
  const message = errors[field]
  if (!message) return null
  return (
    <div className="pg-error" role="alert" data-testid={`subset-error-${field}`}>
      {message}
    </div>
  )
}

function ParamRows({
  params,
  onChange
}: {
  params: SubsetForm['params']
  onChange(params: SubsetForm['params']): void
}) {
  const update = (index: number, patch: Partial<SubsetForm['params'][number]>) =>
    onChange(params.map((param, at) => (at === index ? { ...param, ...patch } : param)))
  return (
    <fieldset className="name-values">
      <legend>params</legend>
      {params.map((param, index) => (
        <div key={index} className="name-value">
          <input
            aria-label={`subset param key ${index + 1}`}
            className="narrow"
            value={param.key}
            onChange={(event) => update(index, { key: event.target.value })}
          />
          <input
            aria-label={`subset param value ${index + 1}`}
            value={param.value}
            onChange={(event) => update(index, { value: event.target.value })}
          />
          <button
            type="button"
            className="secondary"
            aria-label={`Remove subset param ${index + 1}`}
            onClick={() => onChange(params.filter((_param, at) => at !== index))}
          >
            ×
          </button>
        </div>
      ))}
      <button
        type="button"
        className="secondary"
        onClick={() => onChange([...params, { key: String(params.length + 1), value: '' }])}
      >
        Add subset param
      </button>
    </fieldset>
  )
}

function BodyEditor({
  form,
  errors,
  onChange
}: {
  form: SubsetForm
  errors: FieldErrors
  onChange(form: SubsetForm): void
}) {
  const text = (field: 'orderBy' | 'limit' | 'offset', label: string, placeholder: string) => (
    <label className="field">
      <span>{label}</span>
      <input
        aria-label={`subset ${label}`}
        value={form[field]}
        placeholder={placeholder}
        onChange={(event) => onChange({ ...form, [field]: event.target.value })}
      />
    </label>
  )
  return (
    <div className="compose">
      <label className="field">
        <span>where (narrows the shape&apos;s own where)</span>
        <textarea
          aria-label="subset where"
          className="mono"
          rows={2}
          spellCheck={false}
          value={form.where}
          placeholder="e.g. priority <= $1 (empty: the whole shape)"
          onChange={(event) => onChange({ ...form, where: event.target.value })}
        />
      </label>
      <FieldError field="where" errors={errors} />
      <ParamRows params={form.params} onChange={(params) => onChange({ ...form, params })} />
      <FieldError field="params" errors={errors} />
      <div className="compose-row">
        {text('orderBy', 'order by', 'e.g. id DESC')}
        {text('limit', 'limit', '1–100000')}
        {text('offset', 'offset', 'rows to skip')}
      </div>
      <FieldError field="order_by" errors={errors} />
      <FieldError field="limit" errors={errors} />
      <FieldError field="offset" errors={errors} />
    </div>
  )
}

function RequestPreview({ method, body, getUrl }: { method: SubsetMethod; body: string; getUrl: string }) {
  if (method === 'POST') {
    return (
      <div>
        <p className="muted">POST /v1/shape with the shape in the URL and this JSON body:</p>
        <pre className="body" data-testid="subset-body">
          {body}
        </pre>
      </div>
    )
  }
  const tooLong = getUrl.length > MAX_URL_LENGTH
  return (
    <div>
      <p className={tooLong ? 'warn' : 'muted'} data-testid="subset-url-length">
        GET URL: {getUrl.length.toLocaleString('en')} characters
        {tooLong && ` — over the server's ${MAX_URL_LENGTH.toLocaleString('en')}-character limit: expect 414`}
      </p>
      <pre className="body" data-testid="subset-get-url">
        {maskUrl(getUrl)}
      </pre>
    </div>
  )
}

function Failure({ failure, onSendAsPost }: { failure: SubsetFailure; onSendAsPost(): void }) {
  if (!failure.message && !failure.tooLong) return null
  return (
    <div className="error-box" role="alert" data-testid="subset-failure">
      {failure.status !== null && <strong>HTTP {failure.status}: </strong>}
      {failure.message}
      {failure.tooLong && (
        <p>
          GET carries the subset in the URL; POST carries it in the body, which has no such limit.{' '}
          <button type="button" onClick={onSendAsPost}>
            Send as POST
          </button>
        </p>
      )}
    </div>
  )
}

function MetadataExplained({ snapshot }: { snapshot: Snapshot }) {
  const { xmin, xmax, xip_list: running, database_lsn: lsn, snapshot_mark: mark } = snapshot.metadata
  return (
    <dl className="snapshot-metadata" data-testid="subset-metadata">
      <dt>xmin {xmin}</dt>
      <dd>
        Every transaction numbered below {xmin} had finished when the snapshot was taken: the rows include what they
        committed.
      </dd>
      <dt>xmax {xmax}</dt>
      <dd>
        Transactions numbered {xmax} and above had not started: the rows do not include them, the stream brings their
        changes.
      </dd>
      <dt>xip_list [{running.join(', ')}]</dt>
      <dd>
        {running.length === 0
          ? `No transaction between ${xmin} and ${xmax} was still running: the snapshot saw all of them that committed.`
          : `Still running at the snapshot, so not in its rows: ${running.join(', ')}. Their changes are applied when the stream brings them.`}
      </dd>
      <dt>database_lsn {lsn}</dt>
      <dd>
        The WAL position at the snapshot. Once the stream reports a position at or past it, the snapshot has nothing
        left to skip and is forgotten.
      </dd>
      <dt>snapshot_mark {mark}</dt>
      <dd>
        Tags this snapshot&apos;s rows (headers.snapshot_mark) and the snapshot-end message the client published after
        them.
      </dd>
      <dt>dropped from the stream</dt>
      <dd data-testid="subset-dropped">
        {snapshot.dropped.length === 0
          ? 'No change so far: none of the changes that followed was already in these rows.'
          : `${snapshot.dropped.length} change${snapshot.dropped.length === 1 ? '' : 's'} already in these rows (committed before the snapshot): ${snapshot.dropped
              .map(
                (change) =>
                  `${change.headers.operation} of ${change.key} (transaction ${String((change.headers.txids as unknown[] | undefined)?.[0] ?? '?')})`
              )
              .join('; ')}`}
      </dd>
    </dl>
  )
}

function SubsetRows({ snapshot }: { snapshot: Snapshot }) {
  const columns = [...new Set(snapshot.rows.slice(0, 50).flatMap((row) => Object.keys(row.value)))]
  return (
    <div>
      <p className="count" data-testid="subset-row-count">
        {snapshot.rowCount} row{snapshot.rowCount === 1 ? '' : 's'} by {snapshot.method}, applied to the shape as
        upserts
        {snapshot.rowCount > snapshot.rows.length && ` (first ${snapshot.rows.length} shown)`}
      </p>
      <div className="table-scroll">
        <ValueTable
          columns={columns.map((name) => ({ name }))}
          rows={snapshot.rows.map((row) => ({
            key: row.key,
            cells: columns.map((column) => row.value[column] ?? null)
          }))}
          label="Subset rows"
        />
      </div>
    </div>
  )
}

/** A subset the stream applied, as the worker holds it (its dropped changes grow as the stream goes on). */
function SubsetResult({ session, index }: { session: WorkbenchSession; index: number }) {
  const view = useSessionView(session, { kind: 'subset', index })
  if (!view) return <p className="muted">Reading the subset…</p>
  return (
    <>
      <SubsetRows snapshot={view.snapshot} />
      <h3>What the metadata says</h3>
      <MetadataExplained snapshot={view.snapshot} />
    </>
  )
}

/** Subset snapshots of the running shape: compose the body, pick POST or GET, see the rows and what their metadata means. */
export function SubsetPanel({ session }: { session: WorkbenchSession }) {
  const [form, setForm] = useState<SubsetForm>(EMPTY_SUBSET_FORM)
  const [method, setMethod] = useState<SubsetMethod>('POST')
  const [pending, setPending] = useState(false)
  const [snapshot, setSnapshot] = useState<number | null>(null)
  const [failure, setFailure] = useState<SubsetFailure | null>(null)
  const preview = previewSubsetRequest(session.config, session.summary?.protocolParams ?? {}, subsetOf(form))

  const send = async (using: SubsetMethod) => {
    setMethod(using)
    const parsed = parseSubsetForm(form)
    if (!parsed.subset) return setFailure({ fields: parsed.fields, message: null, status: null, tooLong: false })
    setPending(true)
    setFailure(null)
    try {
      setSnapshot(await session.requestSnapshot(parsed.subset, { method: using }))
    } catch (error) {
      setFailure(subsetFailureOf(error, using))
    } finally {
      setPending(false)
    }
  }

  return (
    <section className="subset-panel" aria-label="Subset">
      {session.config.definition.log === 'full' && (
        <p className="muted">
          Subsets are meant for log=changes_only shapes (which start with no rows); on a full log they re-send rows the
          shape has.
        </p>
      )}
      <BodyEditor form={form} errors={failure?.fields ?? {}} onChange={setForm} />
      <div className="toolbar" role="radiogroup" aria-label="subset method">
        {(['POST', 'GET'] as const).map((option) => (
          <label key={option}>
            <input
              type="radio"
              name="subset-method"
              value={option}
              checked={method === option}
              onChange={() => setMethod(option)}
            />{' '}
            {option}
            {option === 'GET' && <small className="muted"> (legacy subset__* parameters)</small>}
          </label>
        ))}
        <button type="button" disabled={pending} onClick={() => void send(method)}>
          {pending ? 'Requesting…' : 'Request subset'}
        </button>
      </div>
      <RequestPreview method={method} body={preview.body} getUrl={preview.getUrl} />
      {failure && <Failure failure={failure} onSendAsPost={() => void send('POST')} />}
      {snapshot !== null && <SubsetResult session={session} index={snapshot} />}
    </section>
  )
}
