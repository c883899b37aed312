import { useState } from 'react'
import { useQueryClient } from '@tanstack/react-query'
import type { HostFormat, ServerBudget, ToolCost } from '../../../shared/contract/mcp-tools'
import { ErrorBox } from '../../components/ErrorBox'
import { useCall, useCallMutation, useInvalidateOn } from '../../hooks'
import { share, sortRows, useSort } from './budget-sort'
import { SortableHead, type HeadColumn } from './SortHeader'

export interface BudgetSettings {
  contextWindow: number
  format: HostFormat
}

const SETTINGS_KEY = 'syncscope.mcp.budget'
/** VS Code refuses a chat request with more tools than this. */
const VSCODE_TOOL_LIMIT = 128
const DEFAULT_SETTINGS: BudgetSettings = { contextWindow: 200_000, format: 'claude' }
const FORMAT_LABELS: Record<HostFormat, string> = {
  claude: 'Claude Code (Anthropic tools: name, description cut at 2048 characters, input_schema)',
  openai: 'VS Code / Cursor (OpenAI function tools: name, description, parameters)'
}

function readSettings(): BudgetSettings {
  try {
    const stored = JSON.parse(localStorage.getItem(SETTINGS_KEY) ?? '{}') as Partial<BudgetSettings>
    return {
      contextWindow:
        Number.isInteger(stored.contextWindow) && (stored.contextWindow ?? 0) > 0
          ? stored.contextWindow!
          : DEFAULT_SETTINGS.contextWindow,
      format: stored.format === 'openai' ? 'openai' : 'claude'
    }
  } catch {
    return DEFAULT_SETTINGS
  }
}

/** The context window the shares are of and the host form the counts are for, kept in this browser. */
export function useBudgetSettings(): [BudgetSettings, (settings: BudgetSettings) => void] {
  const [settings, setSettings] = useState(readSettings)
  return [
    settings,
    (next) => {
      localStorage.setItem(SETTINGS_KEY, JSON.stringify(next))
      setSettings(next)
    }
  ]
}

function BudgetSettingsForm({
  settings,
  onChange
}: {
  settings: BudgetSettings
  onChange: (s: BudgetSettings) => void
}) {
  const [window, setWindow] = useState(String(settings.contextWindow))
  const valid = /^[1-9]\d*$/.test(window)
  return (
    <div className="inline-form">
      <label>
        Context window{' '}
        <input
          type="number"
          min={1}
          value={window}
          onChange={(event) => {
            setWindow(event.target.value)
            if (/^[1-9]\d*$/.test(event.target.value))
              onChange({ ...settings, contextWindow: Number(event.target.value) })
          }}
          data-testid="mcp-budget-window"
        />{' '}
        tokens
      </label>
      {!valid && <em className="mcp-issue">a whole number of tokens</em>}{' '}
      <label>
        as sent by{' '}
        <select
          value={settings.format}
          onChange={(event) => onChange({ ...settings, format: event.target.value as HostFormat })}
          data-testid="mcp-budget-format"
        >
          {Object.entries(FORMAT_LABELS).map(([format, label]) => (
            <option key={format} value={format}>
              {label}
            </option>
          ))}
        </select>
      </label>
    </div>
  )
}

function TokenizerNote({ tokenizer }: { tokenizer: ServerBudget['tokenizer'] }) {
  return (
    <p className="hint" data-testid="mcp-budget-tokenizer">
      Tokens counted with {tokenizer.encoding} ({tokenizer.package} {tokenizer.version}). {tokenizer.note}
    </p>
  )
}

type OverviewColumn = 'server' | 'tools' | 'exposedTokens' | 'totalTokens'
const OVERVIEW_COLUMNS: HeadColumn<OverviewColumn>[] = [
  { column: 'server', label: 'server' },
  { column: 'tools', label: 'tools exposed' },
  { column: 'exposedTokens', label: 'tokens exposed' },
  { label: 'share' },
  { column: 'totalTokens', label: 'tokens of all tools' }
]

/** Every server's tool budget: what hosts get, of all it lists; servers not measured yet start only on request. */
export function BudgetOverviewPanel({
  settings,
  onSettings,
  onSelect
}: {
  settings: BudgetSettings
  onSettings: (settings: BudgetSettings) => void
  onSelect: (server: string) => void
}) {
  const overview = useCall('mcp.budgetOverview', { format: settings.format })
  useInvalidateOn('mcp.changed', ['mcp.budgetOverview'])
  const measure = useCallMutation('mcp.toolBudget', ['mcp.budgetOverview'])
  const { sort, toggle } = useSort<OverviewColumn>('exposedTokens')
  const servers = overview.data?.servers ?? []
  const rows = sortRows(servers, sort, (row, key) =>
    key === 'server'
      ? row.server
      : key === 'tools'
        ? (row.exposed?.tools ?? null)
        : key === 'exposedTokens'
          ? (row.exposed?.tokens ?? null)
          : (row.total?.tokens ?? null)
  )
  const measurable = servers.filter((row) => !row.total && ['idle', 'connecting', 'connected'].includes(row.state))
  const exposedSum = servers.reduce((sum, row) => sum + (row.exposed?.tokens ?? 0), 0)
  const toolsSum = servers.reduce((sum, row) => sum + (row.exposed?.tools ?? 0), 0)
  return (
    <section className="panel" aria-label="Tool budget" data-testid="mcp-budget-overview">
      <h2>Tool budget</h2>
      <BudgetSettingsForm settings={settings} onChange={onSettings} />
      <ErrorBox error={overview.error ?? measure.error} />
      <table className="grid mcp-budget">
        <SortableHead columns={OVERVIEW_COLUMNS} sort={sort} onSort={toggle} />
        <tbody>
          {rows.map((row) => (
            <tr key={row.server} data-testid={`mcp-budget-row-${row.server}`}>
              <td>
                <button type="button" className="link" onClick={() => onSelect(row.server)}>
                  {row.server}
                </button>
              </td>
              {row.total && row.exposed ? (
                <>
                  <td>
                    {row.exposed.tools} of {row.total.tools}
                  </td>
                  <td data-testid={`mcp-budget-exposed-${row.server}`}>
                    {row.exact ? '' : '≈'}
                    {row.exposed.tokens.toLocaleString('en')}
                  </td>
                  <td>{share(row.exposed.tokens, settings.contextWindow)}</td>
                  <td>{row.total.tokens.toLocaleString('en')}</td>
                </>
              ) : (
                <td colSpan={4}>
                  {['idle', 'connecting', 'connected'].includes(row.state) ? (
                    <button
                      type="button"
                      disabled={measure.isPending}
                      onClick={() => measure.mutate({ name: row.server, format: settings.format })}
                      data-testid={`mcp-budget-measure-${row.server}`}
                    >
                      Measure (lists its tools{row.state === 'idle' ? ': starts the server' : ''})
                    </button>
                  ) : (
                    <small>{row.state}: no tools to measure</small>
                  )}
                </td>
              )}
            </tr>
          ))}
        </tbody>
        <tfoot>
          <tr>
            <th>all servers</th>
            <td data-testid="mcp-budget-tools-sum">{toolsSum}</td>
            <td data-testid="mcp-budget-exposed-sum">{exposedSum.toLocaleString('en')}</td>
            <td>{share(exposedSum, settings.contextWindow)}</td>
            <td />
          </tr>
        </tfoot>
      </table>
      {measurable.length > 1 && (
        <button
          type="button"
          disabled={measure.isPending}
          onClick={() => measurable.forEach((row) => measure.mutate({ name: row.server, format: settings.format }))}
        >
          Measure all ({measurable.length})
        </button>
      )}
      {toolsSum > VSCODE_TOOL_LIMIT && (
        <p className="warn" data-testid="mcp-budget-too-many">
          {toolsSum} tools exposed: VS Code sends at most {VSCODE_TOOL_LIMIT} tools in a request.
        </p>
      )}
      {overview.data && <TokenizerNote tokenizer={overview.data.tokenizer} />}
    </section>
  )
}

type ToolColumn = 'exposed' | 'name' | 'tokens' | 'description' | 'input' | 'output'
const TOOL_COLUMNS: HeadColumn<ToolColumn>[] = [
  { column: 'exposed', label: 'exposed' },
  { column: 'name', label: 'tool (as the host names it)' },
  { column: 'tokens', label: 'tokens' },
  { label: 'share' },
  { column: 'description', label: 'description' },
  { column: 'input', label: 'input schema' },
  { column: 'output', label: 'output schema (not sent)' }
]

function toolValue(tool: ToolCost, key: ToolColumn): number | string | null {
  if (key === 'exposed') return tool.exposed ? 1 : 0
  if (key === 'name') return tool.name
  if (key === 'tokens') return tool.tokens
  if (key === 'description') return tool.parts.description
  if (key === 'input') return tool.parts.inputSchema
  return tool.parts.outputSchema
}

/** Hidden by a deny pattern other than its own name: ticking it alone cannot expose it. */
const lockedByPattern = (tool: ToolCost) =>
  !tool.exposed && tool.reason?.startsWith('denied by') === true && tool.reason !== `denied by "${tool.tool}"`

/** One server's tools with what each costs, ticked when other hosts get it; the ticks edit the server's filter. */
export function ServerToolBudget({
  server,
  editable,
  settings
}: {
  server: string
  editable: boolean
  settings: BudgetSettings
}) {
  const input = { name: server, format: settings.format }
  const budget = useCall('mcp.toolBudget', input)
  const client = useQueryClient()
  const onSaved = (saved: ServerBudget) => {
    client.setQueryData(['mcp.toolBudget', input], saved)
    void client.invalidateQueries({ queryKey: ['mcp.budgetOverview'] })
  }
  const setExposed = useCallMutation('mcp.setToolExposed')
  const setFilter = useCallMutation('mcp.setToolFilter')
  const pending = setExposed.isPending || setFilter.isPending
  const { sort, toggle } = useSort<ToolColumn>('tokens')
  const data = budget.data
  const window = settings.contextWindow
  return (
    <section className="panel" aria-label={`Tool budget of ${server}`} data-testid="mcp-tool-budget">
      <h2>Tool budget of {server}</h2>
      <ErrorBox error={budget.error ?? setExposed.error ?? setFilter.error} />
      {budget.isLoading && <p>Listing tools…</p>}
      {data && (
        <>
          <p data-testid="mcp-budget-summary">
            Other hosts get <strong>{data.exposed.tools}</strong> of {data.total.tools} tools:{' '}
            <strong>
              {data.exact ? '' : '≈'}
              {data.exposed.tokens.toLocaleString('en')}
            </strong>{' '}
            tokens, {share(data.exposed.tokens, window)} of a {window.toLocaleString('en')}-token context window (all
            tools: {data.total.tokens.toLocaleString('en')}, {share(data.total.tokens, window)}).
          </p>
          {editable ? (
            <div className="toolbar">
              <button
                type="button"
                disabled={pending}
                onClick={() => setFilter.mutate({ ...input, filter: null }, { onSuccess: onSaved })}
                data-testid="mcp-budget-expose-all"
              >
                Expose all
              </button>
              <button
                type="button"
                disabled={pending}
                onClick={() => setFilter.mutate({ ...input, filter: { allow: [] } }, { onSuccess: onSaved })}
                data-testid="mcp-budget-expose-none"
              >
                Expose none
              </button>
              {data.filter && (
                <small data-testid="mcp-budget-filter">
                  filter: <code>{JSON.stringify(data.filter)}</code>
                </small>
              )}
            </div>
          ) : (
            <p className="hint">This entry is not in a file the app writes: edit its filter where it is defined.</p>
          )}
          <table className="grid mcp-budget">
            <SortableHead columns={TOOL_COLUMNS} sort={sort} onSort={toggle} />
            <tbody>
              {sortRows(data.tools, sort, toolValue).map((tool) => (
                <tr
                  key={tool.tool}
                  className={tool.exposed ? '' : 'hidden-tool'}
                  data-testid={`mcp-budget-tool-${tool.tool}`}
                >
                  <td>
                    <input
                      type="checkbox"
                      checked={tool.exposed}
                      disabled={!editable || pending || lockedByPattern(tool)}
                      title={tool.reason ?? 'other hosts get this tool'}
                      aria-label={`expose ${tool.tool}`}
                      onChange={(event) =>
                        setExposed.mutate(
                          { ...input, tool: tool.tool, exposed: event.target.checked },
                          { onSuccess: onSaved }
                        )
                      }
                      data-testid={`mcp-budget-check-${tool.tool}`}
                    />
                  </td>
                  <td>
                    <details>
                      <summary>
                        <code>{tool.name}</code>
                      </summary>
                      <pre className="mcp-diff">{tool.serialized}</pre>
                    </details>
                    {tool.reason && <small className="warn">hidden: {tool.reason}</small>}
                  </td>
                  <td data-testid={`mcp-budget-tokens-${tool.tool}`}>
                    {tool.exact ? '' : '≈'}
                    {tool.tokens.toLocaleString('en')}
                  </td>
                  <td>{share(tool.tokens, window)}</td>
                  <td>{tool.parts.description}</td>
                  <td>{tool.parts.inputSchema}</td>
                  <td>{tool.parts.outputSchema ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <p className="hint">
            A tool costs its whole definition as the host sends it (the JSON around the parts counts too). Hosts receive
            the output schema but do not send it to the model: it is not in the totals. The filter is enforced by{' '}
            <code>syncscope mcp run</code>, which every exported entry starts; this page can still call hidden tools.
          </p>
          <TokenizerNote tokenizer={data.tokenizer} />
        </>
      )}
    </section>
  )
}
