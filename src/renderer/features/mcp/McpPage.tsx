import { useCallback, useState } from 'react'
import type { McpEntry } from '../../../shared/contract/mcp'
import { ErrorBox } from '../../components/ErrorBox'
import { ExportPanel } from './ExportPanel'
import { useCall, useCallMutation, useEvent, useInvalidateOn } from '../../hooks'
import { ClientMetadataPanel } from './ClientMetadataPanel'
import { Elicitations } from './Elicitations'
import { OAuthPanel } from './OAuthPanel'
import { NEW_SERVER, ServerEditor, type EditTarget } from './ServerEditor'
import { BudgetOverviewPanel, ServerToolBudget, useBudgetSettings } from './ToolBudget'
import { ToolExplorer } from './ToolExplorer'
import { WorkspaceTrust } from './WorkspaceTrust'
import './mcp.css'

const REFRESHED_BY_CHANGES = ['mcp.list'] as const
const STATE_LABELS: Record<McpEntry['state'], string> = {
  idle: 'idle (starts on first use)',
  connecting: 'connecting',
  connected: 'connected',
  'needs-login': 'needs login',
  error: 'error',
  disabled: 'disabled',
  untrusted: 'untrusted (not approved)'
}
/** States in which a server's tools cannot be listed. */
const NO_TOOLS: ReadonlySet<McpEntry['state']> = new Set(['error', 'disabled', 'needs-login', 'untrusted'])

/** VS Code's `${input:id}` prompts: the value a person types goes to the secret store. */
function InputValue({ id }: { id: string }) {
  const setInput = useCallMutation('mcp.setInput', ['mcp.list'])
  const [value, setValue] = useState('')
  return (
    <form
      className="inline-form"
      onSubmit={(event) => {
        event.preventDefault()
        setInput.mutate({ id, value })
      }}
    >
      <input
        type="password"
        placeholder={`value of input ${id}`}
        value={value}
        onChange={(event) => setValue(event.target.value)}
        data-testid={`mcp-input-${id}`}
      />
      <button type="submit" disabled={!value || setInput.isPending}>
        Store
      </button>
      <ErrorBox error={setInput.error} />
    </form>
  )
}

/** Other clients' config files found here, and any file by path: their servers are copied into settings.json. */
function ImportPanel() {
  const candidates = useCall('mcp.importCandidates', {})
  const importFile = useCallMutation('mcp.import', ['mcp.list'])
  const [path, setPath] = useState('')
  const run = (file: string) => importFile.mutate({ path: file })
  return (
    <div className="mcp-import" data-testid="mcp-import">
      <h3>Import</h3>
      <ul>
        {candidates.data?.map((candidate) => (
          <li key={candidate.path}>
            {candidate.client} <code>{candidate.path}</code>{' '}
            <button type="button" onClick={() => run(candidate.path)} disabled={importFile.isPending}>
              Import
            </button>
          </li>
        ))}
      </ul>
      <form
        className="inline-form"
        onSubmit={(event) => {
          event.preventDefault()
          run(path)
        }}
      >
        <input
          placeholder="path of a Claude, Cursor, VS Code or Inspector config"
          value={path}
          onChange={(event) => setPath(event.target.value)}
          data-testid="mcp-import-path"
        />
        <button type="submit" disabled={!path || importFile.isPending} data-testid="mcp-import-run">
          Import file
        </button>
      </form>
      <ErrorBox error={importFile.error} />
      {importFile.data && (
        <p data-testid="mcp-import-result">
          imported {importFile.data.imported.join(', ') || 'nothing'}
          {importFile.data.skipped.map((skip) => `; skipped ${skip.name} (${skip.reason})`).join('')}
        </p>
      )}
    </div>
  )
}

function EntryRow({
  entry,
  selected,
  onSelect,
  onEdit
}: {
  entry: McpEntry
  selected: boolean
  onSelect: () => void
  onEdit: () => void
}) {
  const reconnect = useCallMutation('mcp.reconnect', ['mcp.list'])
  const remove = useCallMutation('mcp.remove', ['mcp.list'])
  const editable = entry.source === 'settings' || entry.source === 'workspace'
  return (
    <tr className={selected ? 'selected' : ''} data-testid={`mcp-row-${entry.name}`}>
      <td>
        <button type="button" className="link" onClick={onSelect}>
          <strong>{entry.name}</strong>
        </button>
        <div>
          <small>
            {entry.transport ?? 'transport ?'}
            {entry.authMode && ` · auth ${entry.authMode}`}
            {entry.toolCount !== null && ` · ${entry.toolCount} tools`}
            {entry.pid !== null && ` · pid ${entry.pid}`}
            {entry.restarts > 0 && ` · ${entry.restarts} restarts`}
          </small>
        </div>
      </td>
      <td>
        <span className={`badge mcp-${entry.state}`} data-testid={`mcp-state-${entry.name}`}>
          {STATE_LABELS[entry.state]}
        </span>
        {entry.warning && (
          <div className="warn" data-testid={`mcp-warning-${entry.name}`}>
            <small>{entry.warning}</small>
          </div>
        )}
        {entry.error && (
          <div className="mcp-error" data-testid={`mcp-error-${entry.name}`}>
            <strong>{entry.error.code}</strong>: {entry.error.message}
            {entry.error.stderr && entry.error.stderr.length > 0 && (
              <pre>{entry.error.stderr.slice(-8).join('\n')}</pre>
            )}
            {[...entry.error.message.matchAll(/\$\{input:([^}]+)\}/g)].map((match) => (
              <InputValue key={match[1]} id={match[1] ?? ''} />
            ))}
          </div>
        )}
      </td>
      <td>
        <small>{entry.source}</small>
        {entry.sourcePath && (
          <div>
            <code className="mcp-url" data-testid={`mcp-source-${entry.name}`}>
              {entry.sourcePath}
            </code>
          </div>
        )}
        {entry.shadows.map((shadow, index) => (
          <div key={index}>
            <small className="warn">overrides {shadow.source}</small>
          </div>
        ))}
      </td>
      <td className="toolbar">
        {editable && (
          <button type="button" onClick={onEdit} data-testid={`mcp-edit-${entry.name}`}>
            Edit
          </button>
        )}
        <button
          type="button"
          onClick={() => reconnect.mutate({ name: entry.name })}
          disabled={
            reconnect.isPending ||
            entry.state === 'untrusted' ||
            (entry.state === 'error' && entry.error?.code === 'invalid_config')
          }
        >
          Reconnect
        </button>
        {editable && (
          <button
            type="button"
            onClick={() =>
              window.confirm(`Remove ${entry.name} and its stored secrets?`) &&
              remove.mutate({ name: entry.name, target: entry.source === 'workspace' ? 'workspace' : 'settings' })
            }
          >
            Remove
          </button>
        )}
        <ErrorBox error={reconnect.error ?? remove.error} />
      </td>
    </tr>
  )
}

/** MCP servers: where they come from, their state and errors, editing, OAuth, and a tool explorer. */
export function McpPage() {
  const list = useCall('mcp.list', {})
  useInvalidateOn('mcp.changed', REFRESHED_BY_CHANGES)
  const [selected, setSelected] = useState<string | null>(null)
  const [editing, setEditing] = useState<EditTarget | null>(null)
  const [budgetSettings, setBudgetSettings] = useBudgetSettings()
  // A login started elsewhere (a script on the contract, another window): offer the link; opening it is a person's click.
  const [authorize, setAuthorize] = useState<{ name: string; url: string } | null>(null)
  useEvent(
    'mcp.authorize',
    useCallback((payload: { name: string; url: string }) => setAuthorize(payload), [])
  )
  const entries = list.data?.entries ?? []
  const current = entries.find((entry) => entry.name === selected) ?? null
  return (
    <div className="page mcp-page">
      <h1>MCP servers</h1>
      <ErrorBox error={list.error} />
      {authorize && entries.find((entry) => entry.name === authorize.name)?.state !== 'connected' && (
        <p className="warn" data-testid="mcp-authorize-banner">
          {authorize.name} waits for a login:{' '}
          <a href={authorize.url} target="_blank" rel="noopener noreferrer">
            open the authorisation page
          </a>
        </p>
      )}
      <WorkspaceTrust />
      {list.data && (
        <section className="panel" aria-label="Sources">
          <h2>Sources</h2>
          <ul className="mcp-sources" data-testid="mcp-sources">
            {list.data.sources.map((source) => (
              <li key={`${source.kind}:${source.path}`}>
                <span className="badge">{source.kind}</span> <code>{source.path}</code> — {source.state}
                {source.format && source.format !== 'servers' && ` (${source.format} format, imported)`}
                {source.error && <div className="error-box">{source.error}</div>}
              </li>
            ))}
          </ul>
          <p className="hint">
            The workspace <code>mcp.json</code> wins over <code>settings.json</code> for a server of the same name, once
            you approve it; stored secrets and tokens go only to an entry with the name and the URL (or command line)
            they were entered for. Secrets: {list.data.secretStore}.
          </p>
          <ClientMetadataPanel key={list.data.clientMetadata.url ?? ''} setting={list.data.clientMetadata} />
          <ImportPanel />
          <ExportPanel />
        </section>
      )}
      <section className="panel" aria-label="Servers">
        <div className="toolbar">
          <h2>Servers</h2>
          <button type="button" onClick={() => setEditing(NEW_SERVER)} data-testid="mcp-add">
            Add server
          </button>
        </div>
        {entries.length === 0 ? (
          <p>No servers yet: add one here, or write a workspace mcp.json.</p>
        ) : (
          <table className="grid mcp-servers">
            <thead>
              <tr>
                <th>server</th>
                <th>state</th>
                <th>source</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {entries.map((entry) => (
                <EntryRow
                  key={entry.name}
                  entry={entry}
                  selected={entry.name === selected}
                  onSelect={() => setSelected(entry.name)}
                  onEdit={() =>
                    setEditing({
                      name: entry.name,
                      entry: entry.config ?? {},
                      target: entry.source === 'workspace' ? 'workspace' : 'settings',
                      isNew: false
                    })
                  }
                />
              ))}
            </tbody>
          </table>
        )}
      </section>
      {entries.length > 0 && (
        <BudgetOverviewPanel settings={budgetSettings} onSettings={setBudgetSettings} onSelect={setSelected} />
      )}
      {editing && (
        <ServerEditor
          key={editing.isNew ? '(new)' : editing.name}
          initial={editing}
          onDone={(name) => {
            setEditing(null)
            if (name) setSelected(name)
          }}
        />
      )}
      <Elicitations />
      {current && current.authMode === 'authorizationCode' && <OAuthPanel entry={current} />}
      {current && !NO_TOOLS.has(current.state) && (
        <ServerToolBudget
          key={`budget:${current.name}`}
          server={current.name}
          editable={['settings', 'workspace', 'file'].includes(current.source)}
          settings={budgetSettings}
        />
      )}
      {current && !NO_TOOLS.has(current.state) && <ToolExplorer key={current.name} server={current.name} />}
    </div>
  )
}
