import type { TableInfo } from '../../../shared/contract/db'
import type { ProxyStatus } from '../../../shared/contract/proxy'
import type {
  LocalShapeServer,
  NameValue,
  ShapeTarget,
  WorkbenchSettings
} from '../../../shared/contract/shapes-workbench'
import type { ShapeDraft } from '../../../shared/shape-client'
import { tableParam } from './table-param'
import type { WhereError } from './where-error'

interface ComposeProps {
  settings: WorkbenchSettings
  onChange(settings: WorkbenchSettings): void
  tables: TableInfo[]
  localServer: LocalShapeServer | undefined
  proxy: ProxyStatus | undefined
  localSecret: string
  onLocalSecret(secret: string): void
  whereError: WhereError | null
}

function NameValueList({
  label,
  entries,
  onChange
}: {
  label: string
  entries: NameValue[]
  onChange(entries: NameValue[]): void
}) {
  const update = (index: number, patch: Partial<NameValue>) =>
    onChange(entries.map((entry, at) => (at === index ? { ...entry, ...patch, redacted: false } : entry)))
  return (
    <fieldset className="name-values">
      <legend>{label}</legend>
      {entries.map((entry, index) => (
        <div key={index} className="name-value">
          <input
            aria-label={`${label} name ${index + 1}`}
            value={entry.name}
            placeholder="name"
            onChange={(event) => update(index, { name: event.target.value })}
          />
          <input
            aria-label={`${label} value ${index + 1}`}
            value={entry.value}
            placeholder={entry.redacted ? 'not saved: enter it again' : 'value'}
            onChange={(event) => update(index, { value: event.target.value })}
          />
          <button
            type="button"
            className="secondary"
            aria-label={`Remove ${label} ${index + 1}`}
            onClick={() => onChange(entries.filter((_entry, at) => at !== index))}
          >
            ×
          </button>
        </div>
      ))}
      <button
        type="button"
        className="secondary"
        onClick={() => onChange([...entries, { name: '', value: '', redacted: false }])}
      >
        Add {label.toLowerCase().replace(/s$/, '')}
      </button>
    </fieldset>
  )
}

function WhereField({
  where,
  error,
  onChange
}: {
  where: string
  error: WhereError | null
  onChange(where: string): void
}) {
  return (
    <label className="field">
      <span>where</span>
      <textarea
        aria-label="where"
        className="mono"
        rows={3}
        value={where}
        spellCheck={false}
        onChange={(event) => onChange(event.target.value)}
        placeholder="e.g. priority <= $1, or project_id IN (SELECT id FROM projects WHERE owner_id = $1)"
      />
      {error && (
        <div className="pg-error" role="alert" data-testid="where-error">
          <strong>{error.message}</strong>
          {error.position !== null && (
            <pre className="error-position">
              {where.slice(0, error.position)}
              <mark>{where.slice(error.position, error.position + 1) || ' '}</mark>
              {where.slice(error.position + 1)}
              {'\n'}at position {error.position + 1}
            </pre>
          )}
        </div>
      )}
    </label>
  )
}

function ColumnPicker({
  table,
  columns,
  onChange
}: {
  table: TableInfo
  columns: string[]
  onChange(columns: string[]): void
}) {
  const all = columns.length === 0
  const toggle = (name: string, checked: boolean) => {
    const current = all ? table.columns.map((column) => column.name) : columns
    const next = checked ? [...current, name] : current.filter((column) => column !== name)
    const ordered = table.columns.map((column) => column.name).filter((column) => next.includes(column))
    onChange(ordered.length === table.columns.length ? [] : ordered)
  }
  return (
    <fieldset className="columns">
      <legend>columns {all && <small>(all)</small>}</legend>
      {table.columns.map((column) => (
        <label key={column.name} title={column.type}>
          <input
            type="checkbox"
            checked={all || columns.includes(column.name) || column.isPrimaryKey}
            disabled={column.isPrimaryKey}
            onChange={(event) => toggle(column.name, event.target.checked)}
          />
          {column.name}
          {column.isPrimaryKey && <span className="pk"> PK</span>}
        </label>
      ))}
    </fieldset>
  )
}

function Select<T extends string>({
  label,
  value,
  options,
  onChange
}: {
  label: string
  value: T
  options: Array<[T, string]>
  onChange(value: T): void
}) {
  return (
    <label className="field">
      <span>{label}</span>
      <select aria-label={label} value={value} onChange={(event) => onChange(event.target.value as T)}>
        {options.map(([option, text]) => (
          <option key={option} value={option}>
            {text}
          </option>
        ))}
      </select>
    </label>
  )
}

const NEW_TARGETS: Record<ShapeTarget['kind'], ShapeTarget> = {
  local: { kind: 'local' },
  proxy: { kind: 'proxy', route: 'shape', shapeName: '', userId: '' },
  // Compose starts its URL at the app's own shape server, whose port main picks
  custom: { kind: 'custom', url: '', headers: [], params: [] }
}

/** The proxy target: a named shape or the gatekeeper, and the test user to call as (their token is asked for per run). */
function ProxyTargetFields({
  target,
  proxy,
  onChange
}: {
  target: Extract<ShapeTarget, { kind: 'proxy' }>
  proxy: ProxyStatus | undefined
  onChange(target: ShapeTarget): void
}) {
  if (!proxy) return null
  if (!proxy.running) {
    return (
      <p className="warn" role="alert" data-testid="proxy-not-running">
        The proxy is not running: start it on the Proxy page with <strong>Start the proxy</strong>, or start the app
        with <code>--proxy-config FILE</code>.
      </p>
    )
  }
  return (
    <>
      <p className="muted">
        Proxy at <code data-testid="workbench-proxy-url">{proxy.url}</code>
      </p>
      <Select
        label="proxy route"
        value={target.route}
        options={[
          ['shape', 'named shape (/api/shapes/<name>)'],
          ['gatekeeper', 'gatekeeper (POST /gatekeeper/<table>)']
        ]}
        onChange={(route) => onChange({ ...target, route })}
      />
      {target.route === 'shape' ? (
        <>
          <Select
            label="proxy shape"
            value={target.shapeName}
            options={[
              ['', 'pick a shape…'],
              ...proxy.shapes.map((shape): [string, string] => [
                shape.name,
                `${shape.name} (${shape.table}${shape.where ? ` where ${shape.where}` : ''})`
              ])
            ]}
            onChange={(shapeName) => onChange({ ...target, shapeName })}
          />
          <p className="muted">
            The proxy sets the table, columns, where and params of a named shape: of the fields above only replica and
            log apply.
          </p>
        </>
      ) : (
        <p className="muted">
          The gatekeeper is asked for the shape composed above; tables with a policy:{' '}
          {proxy.gatekeeperTables.join(', ') || 'none'}.
        </p>
      )}
      <Select
        label="proxy user"
        value={target.userId}
        options={[
          ['', 'pick a user…'],
          ...proxy.users.map((user): [string, string] => [
            user.id,
            `${user.name} (${user.roles.join(', ') || 'no roles'})`
          ])
        ]}
        onChange={(userId) => onChange({ ...target, userId })}
      />
    </>
  )
}

/** The shape definition, live mode, start offset and target of the workbench. */
export function Compose({
  settings,
  onChange,
  tables,
  localServer,
  proxy,
  localSecret,
  onLocalSecret,
  whereError
}: ComposeProps) {
  const { definition, target } = settings
  const table = tables.find((candidate) => tableParam(candidate) === definition.table)
  const setDefinition = (patch: Partial<ShapeDraft>) =>
    onChange({ ...settings, definition: { ...definition, ...patch } })
  return (
    <div className="compose">
      <Select
        label="table"
        value={definition.table}
        options={[
          ['', 'pick a table…'],
          ...tables.map((candidate): [string, string] => [
            tableParam(candidate),
            `${tableParam(candidate)} (${candidate.rowCount})`
          ])
        ]}
        onChange={(value) => setDefinition({ table: value, columns: [] })}
      />
      {table && (
        <ColumnPicker
          table={table}
          columns={definition.columns}
          onChange={(columns) => setDefinition({ columns: columns.length === 0 ? [] : withPrimaryKey(table, columns) })}
        />
      )}
      <WhereField where={definition.where} error={whereError} onChange={(where) => setDefinition({ where })} />
      <fieldset className="name-values">
        <legend>params</legend>
        {definition.params.map((value, index) => (
          <div key={index} className="name-value">
            <code>${index + 1}</code>
            <input
              aria-label={`param ${index + 1}`}
              value={value}
              onChange={(event) =>
                setDefinition({
                  params: definition.params.map((param, at) => (at === index ? event.target.value : param))
                })
              }
            />
            <button
              type="button"
              className="secondary"
              aria-label={`Remove param ${index + 1}`}
              onClick={() => setDefinition({ params: definition.params.filter((_param, at) => at !== index) })}
            >
              ×
            </button>
          </div>
        ))}
        <button
          type="button"
          className="secondary"
          onClick={() => setDefinition({ params: [...definition.params, ''] })}
        >
          Add param
        </button>
      </fieldset>
      <div className="compose-row">
        <Select
          label="replica"
          value={definition.replica}
          options={[
            ['default', 'default'],
            ['full', 'full']
          ]}
          onChange={(replica) => setDefinition({ replica })}
        />
        <Select
          label="log"
          value={definition.log}
          options={[
            ['full', 'full'],
            ['changes_only', 'changes_only']
          ]}
          onChange={(log) => setDefinition({ log })}
        />
        <Select
          label="live mode"
          value={settings.live}
          options={[
            ['off', 'off'],
            ['long-poll', 'long-poll'],
            ['sse', 'SSE']
          ]}
          onChange={(live) => onChange({ ...settings, live })}
        />
        <Select
          label="start offset"
          value={settings.offset}
          options={[
            ['-1', '-1 (everything)'],
            ['now', 'now']
          ]}
          onChange={(offset) => onChange({ ...settings, offset })}
        />
      </div>
      <Select
        label="target"
        value={target.kind}
        options={[
          ['local', `local server (${localServer?.headerBrand ?? '…'} headers)`],
          ['proxy', 'proxy (as a test user)'],
          ['custom', 'custom URL']
        ]}
        onChange={(kind) =>
          onChange({
            ...settings,
            target:
              kind === 'custom'
                ? { kind, url: `${localServer?.url ?? window.location.origin}/v1/shape`, headers: [], params: [] }
                : NEW_TARGETS[kind]
          })
        }
      />
      {target.kind === 'proxy' && (
        <ProxyTargetFields target={target} proxy={proxy} onChange={(next) => onChange({ ...settings, target: next })} />
      )}
      {target.kind === 'local' && localServer?.secretRequired && (
        <label className="field">
          <span>secret (the local server was started with --secret)</span>
          <input
            aria-label="local secret"
            type="password"
            value={localSecret}
            onChange={(event) => onLocalSecret(event.target.value)}
          />
        </label>
      )}
      {target.kind === 'custom' && (
        <>
          <label className="field">
            <span>shape URL</span>
            <input
              aria-label="shape URL"
              value={target.url}
              onChange={(event) => onChange({ ...settings, target: { ...target, url: event.target.value } })}
            />
          </label>
          <NameValueList
            label="Headers"
            entries={target.headers}
            onChange={(headers) => onChange({ ...settings, target: { ...target, headers } })}
          />
          <NameValueList
            label="Query params"
            entries={target.params}
            onChange={(params) => onChange({ ...settings, target: { ...target, params } })}
          />
        </>
      )}
    </div>
  )
}

/** The server refuses a column list without the primary key, so it is always part of it. */
function withPrimaryKey(table: TableInfo, columns: string[]): string[] {
  return table.columns
    .map((column) => column.name)
    .filter((name) => columns.includes(name) || table.primaryKey.includes(name))
}
