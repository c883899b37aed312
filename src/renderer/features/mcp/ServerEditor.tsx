import { useMemo, useState, type FormEvent } from 'react'
import { McpServerNameSchema } from '../../../shared/contract/mcp-config'
import type { ApiError } from '../../api'
import { ErrorBox } from '../../components/ErrorBox'
import { useCallMutation } from '../../hooks'
import { AUTH_MODES, authFields, issuesOf, transportFields } from './entry-form'
import { SchemaFields } from './SchemaFields'

export interface EditTarget {
  name: string
  entry: Record<string, unknown>
  target: 'settings' | 'workspace'
  isNew: boolean
}

export const NEW_SERVER: EditTarget = {
  name: '',
  entry: { transport: 'stdio', command: '' },
  target: 'settings',
  isNew: true
}

/** `["mcp","servers","x","auth","key"]` from the server → `auth.key`, the form's own path. */
function formPathOf(error: ApiError | null, name: string): string | null {
  const path = (error as (ApiError & { details?: { path?: unknown[] } }) | null)?.details?.path
  if (!Array.isArray(path)) return null
  const at = path.indexOf(name)
  return (
    path
      .slice(at + 1)
      .map(String)
      .join('.') || null
  )
}

function withTransport(entry: Record<string, unknown>, transport: string): Record<string, unknown> {
  if (transport === 'http') return { transport, url: entry.url ?? '', auth: entry.auth ?? { mode: 'none' } }
  return { transport, command: entry.command ?? '' }
}

/** Add or edit one server: a form generated from the config schemas, or the entry as raw JSON; both validate as you type. */
export function ServerEditor({ initial, onDone }: { initial: EditTarget; onDone: (name: string | null) => void }) {
  const [name, setName] = useState(initial.name)
  const [target, setTarget] = useState(initial.target)
  const [entry, setEntry] = useState<Record<string, unknown>>(initial.entry)
  const [mode, setMode] = useState<'form' | 'json'>('form')
  const [jsonText, setJsonText] = useState(() => JSON.stringify(initial.entry, null, 2))
  const [jsonError, setJsonError] = useState<string | null>(null)
  const save = useCallMutation('mcp.save', ['mcp.list'])

  const transport = String(entry.transport ?? '')
  const auth = (entry.auth && typeof entry.auth === 'object' ? entry.auth : { mode: 'none' }) as Record<string, unknown>
  const authMode = String(auth.mode ?? 'none')
  const nameIssue = McpServerNameSchema.safeParse(name).error?.issues[0]?.message
  const issues = useMemo(() => {
    const found = issuesOf(entry)
    const serverPath = formPathOf(save.error, name)
    if (serverPath && save.error) found[serverPath] ??= save.error.message
    return found
  }, [entry, save.error, name])

  const update = (next: Record<string, unknown>) => {
    setEntry(next)
    setJsonText(JSON.stringify(next, null, 2))
    save.reset()
  }
  const onJson = (text: string) => {
    setJsonText(text)
    save.reset()
    try {
      const parsed: unknown = JSON.parse(text)
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
        throw new Error('the entry must be a JSON object')
      setEntry(parsed as Record<string, unknown>)
      setJsonError(null)
    } catch (error) {
      setJsonError((error as Error).message)
    }
  }
  const onSubmit = (event: FormEvent) => {
    event.preventDefault()
    save.mutate(
      { name, entry, target, ...(initial.isNew || initial.name === name ? {} : { previousName: initial.name }) },
      { onSuccess: () => onDone(name) }
    )
  }
  const blocked = Boolean(nameIssue) || Boolean(jsonError) || Object.keys(issues).length > 0

  return (
    <form className="panel mcp-editor" onSubmit={onSubmit} aria-label="Server editor" data-testid="mcp-editor">
      <h2>{initial.isNew ? 'Add a server' : `Edit ${initial.name}`}</h2>
      <div className="toolbar">
        <button type="button" className={mode === 'form' ? 'active' : ''} onClick={() => setMode('form')}>
          Form
        </button>
        <button
          type="button"
          className={mode === 'json' ? 'active' : ''}
          data-testid="mcp-json-tab"
          onClick={() => setMode('json')}
        >
          Raw JSON
        </button>
        <label>
          save to{' '}
          <select
            value={target}
            onChange={(event) => setTarget(event.target.value as 'settings' | 'workspace')}
            data-testid="mcp-target"
          >
            <option value="settings">settings.json</option>
            <option value="workspace">workspace mcp.json</option>
          </select>
        </label>
      </div>
      <label className="mcp-field">
        <span>name *</span>
        <input
          data-testid="mcp-field-name"
          value={name}
          onChange={(event) => setName(event.target.value)}
          autoComplete="off"
        />
        {nameIssue && name !== '' && <em className="mcp-issue">{nameIssue}</em>}
      </label>
      {mode === 'form' ? (
        <>
          <label className="mcp-field">
            <span>transport *</span>
            <select
              data-testid="mcp-field-transport"
              value={transport}
              onChange={(event) => update(withTransport(entry, event.target.value))}
            >
              <option value="stdio">stdio</option>
              <option value="http">http</option>
            </select>
            {issues.transport && <em className="mcp-issue">{issues.transport}</em>}
          </label>
          <SchemaFields fields={transportFields(transport)} value={entry} onChange={update} issues={issues} />
          {(transport === 'http' || entry.auth !== undefined) && (
            <fieldset>
              <legend>auth</legend>
              <label className="mcp-field">
                <span>mode</span>
                <select
                  data-testid="mcp-field-auth.mode"
                  value={authMode}
                  onChange={(event) => update({ ...entry, auth: { mode: event.target.value } })}
                >
                  {AUTH_MODES.map((candidate) => (
                    <option key={candidate}>{candidate}</option>
                  ))}
                </select>
              </label>
              <SchemaFields
                fields={authFields(authMode)}
                value={auth}
                onChange={(next) => update({ ...entry, auth: next })}
                issues={issues}
                prefix="auth."
              />
              <p className="hint">
                Secrets you type here go to the secret store; the file gets a <code>{'${keychain:…}'}</code>{' '}
                placeholder. <code>{'${VAR}'}</code> reads the environment.
              </p>
            </fieldset>
          )}
        </>
      ) : (
        <label className="mcp-field">
          <span>entry (JSON)</span>
          <textarea
            data-testid="mcp-json"
            rows={14}
            spellCheck={false}
            value={jsonText}
            onChange={(event) => onJson(event.target.value)}
          />
          {jsonError && (
            <em className="mcp-issue" role="alert" data-testid="mcp-json-error">
              not valid JSON: {jsonError}
            </em>
          )}
          {!jsonError &&
            Object.entries(issues).map(([path, message]) => (
              <em key={path} className="mcp-issue" role="alert" data-testid="mcp-json-issue">
                {path}: {message}
              </em>
            ))}
        </label>
      )}
      {save.error && !formPathOf(save.error, name) && <ErrorBox error={save.error} />}
      <div className="toolbar">
        <button type="submit" disabled={blocked || save.isPending} data-testid="mcp-save">
          {save.isPending ? 'Saving…' : 'Save'}
        </button>
        <button type="button" onClick={() => onDone(null)}>
          Cancel
        </button>
      </div>
    </form>
  )
}
