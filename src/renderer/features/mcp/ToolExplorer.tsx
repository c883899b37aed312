import { useState, type FormEvent } from 'react'
import type { McpCallResult, McpToolInfo } from '../../../shared/contract/mcp'
import { ErrorBox } from '../../components/ErrorBox'
import { useCall, useCallMutation } from '../../hooks'

interface JsonSchemaProperty {
  type?: string | string[]
  description?: string
  enum?: unknown[]
  default?: unknown
}

const typeOf = (property: JsonSchemaProperty) =>
  (Array.isArray(property.type) ? property.type.find((t) => t !== 'null') : property.type) ?? 'json'

/** A form generated from a tool's JSON input schema: typed inputs for scalars, JSON for the rest. */
function ArgumentsForm({
  tool,
  onCall,
  pending
}: {
  tool: McpToolInfo
  onCall: (args: Record<string, unknown>, timeoutMs?: number) => void
  pending: boolean
}) {
  const properties = (tool.inputSchema.properties ?? {}) as Record<string, JsonSchemaProperty>
  const required = new Set((tool.inputSchema.required as string[] | undefined) ?? [])
  const [values, setValues] = useState<Record<string, string>>({})
  const [timeout, setTimeout] = useState('')
  const [error, setError] = useState<string | null>(null)
  const onSubmit = (event: FormEvent) => {
    event.preventDefault()
    const args: Record<string, unknown> = {}
    try {
      for (const [key, property] of Object.entries(properties)) {
        const text = values[key] ?? ''
        if (text === '') continue
        const type = typeOf(property)
        args[key] =
          type === 'string'
            ? text
            : type === 'number' || type === 'integer'
              ? Number(text)
              : type === 'boolean'
                ? text === 'true'
                : JSON.parse(text)
      }
    } catch (parseError) {
      return setError(`not valid JSON: ${(parseError as Error).message}`)
    }
    setError(null)
    onCall(args, timeout ? Number(timeout) : undefined)
  }
  return (
    <form onSubmit={onSubmit} data-testid="mcp-tool-form">
      {Object.entries(properties).map(([key, property]) => {
        const type = typeOf(property)
        const set = (value: string) => setValues((current) => ({ ...current, [key]: value }))
        return (
          <label key={key} className="mcp-field">
            <span>
              {key}
              {required.has(key) ? ' *' : ''} <small>{type}</small>
            </span>
            {property.enum ? (
              <select
                data-testid={`mcp-arg-${key}`}
                value={values[key] ?? ''}
                onChange={(event) => set(event.target.value)}
              >
                <option value="">—</option>
                {property.enum.map((option) => (
                  <option key={String(option)}>{String(option)}</option>
                ))}
              </select>
            ) : type === 'boolean' ? (
              <select
                data-testid={`mcp-arg-${key}`}
                value={values[key] ?? ''}
                onChange={(event) => set(event.target.value)}
              >
                <option value="">—</option>
                <option>true</option>
                <option>false</option>
              </select>
            ) : type === 'object' || type === 'array' || type === 'json' ? (
              <textarea
                data-testid={`mcp-arg-${key}`}
                rows={3}
                value={values[key] ?? ''}
                onChange={(event) => set(event.target.value)}
              />
            ) : (
              <input
                data-testid={`mcp-arg-${key}`}
                type={type === 'string' ? 'text' : 'number'}
                value={values[key] ?? ''}
                onChange={(event) => set(event.target.value)}
              />
            )}
            {property.description && <small>{property.description}</small>}
          </label>
        )
      })}
      <label className="mcp-field">
        <span>timeoutMs</span>
        <input type="number" placeholder="30000" value={timeout} onChange={(event) => setTimeout(event.target.value)} />
      </label>
      {error && <em className="mcp-issue">{error}</em>}
      <button type="submit" disabled={pending} data-testid="mcp-call">
        {pending ? 'Calling…' : `Call ${tool.name}`}
      </button>
    </form>
  )
}

function CallResultView({ result }: { result: McpCallResult }) {
  const content = (
    (result.result as { content?: Array<{ type: string; text?: string }> } | undefined)?.content ?? []
  ).filter((part) => part.type === 'text')
  return (
    <div className={`mcp-result ${result.ok ? 'ok' : 'failed'}`} data-testid="mcp-call-result">
      <p className="timing">
        {result.ok ? 'ok' : 'failed'} in {result.durationMs.toFixed(0)} ms
      </p>
      {result.error && (
        <div className="error-box" role="alert">
          <strong>{result.error.code}: </strong>
          {result.error.message}
        </div>
      )}
      {content.map((part, index) => (
        <pre key={index} data-testid="mcp-call-text">
          {part.text}
        </pre>
      ))}
      {result.outputErrors && result.outputErrors.length > 0 && (
        <div className="error-box" role="alert" data-testid="mcp-output-errors">
          <strong>structuredContent violates the output schema:</strong>
          <ul>
            {result.outputErrors.map((fault) => (
              <li key={fault}>{fault}</li>
            ))}
          </ul>
        </div>
      )}
      {result.outputErrors?.length === 0 && <p className="timing">structuredContent matches the output schema</p>}
      {result.links?.map((link) => (
        <details key={link.uri} data-testid="mcp-resource-link">
          <summary>
            <code>{link.uri}</code> {link.error ? `— ${link.error}` : ''}
          </summary>
          {link.contents !== undefined && <pre>{JSON.stringify(link.contents, null, 2)}</pre>}
        </details>
      ))}
      {result.result !== undefined && (
        <details>
          <summary>raw result</summary>
          <pre>{JSON.stringify(result.result, null, 2)}</pre>
        </details>
      )}
      {result.rpc && (
        <details data-testid="mcp-call-rpc">
          <summary>JSON-RPC request and response</summary>
          <pre>{JSON.stringify(result.rpc.request, null, 2)}</pre>
          <pre>{JSON.stringify(result.rpc.response, null, 2)}</pre>
        </details>
      )}
    </div>
  )
}

/** Every JSON-RPC message exchanged with the server, newest last. */
function RpcLogView({ server }: { server: string }) {
  // kept current by the 'mcp.rpc' events (useEventsIntoCache)
  const log = useCall('mcp.rpcLog', { name: server })
  return (
    <details data-testid="mcp-rpc-log">
      <summary>JSON-RPC log ({log.data?.length ?? 0} messages)</summary>
      <ol>
        {log.data?.map((entry, index) => (
          <li key={index}>
            <small>
              {entry.at} {entry.direction === 'sent' ? '→' : '←'}
            </small>
            <pre>{JSON.stringify(entry.message)}</pre>
          </li>
        ))}
      </ol>
    </details>
  )
}

/** The tools of one server under their `mcp__<server>__<tool>` names; pick one, fill its form, call it. */
export function ToolExplorer({ server }: { server: string }) {
  const tools = useCall('mcp.tools', { name: server })
  const [selected, setSelected] = useState<string | null>(null)
  const call = useCallMutation('mcp.callTool')
  const tool = tools.data?.find((candidate) => candidate.name === selected)
  return (
    <section className="panel" aria-label="Tools" data-testid="mcp-tools">
      <h2>Tools of {server}</h2>
      <ErrorBox error={tools.error} />
      {tools.isLoading && <p>Loading tools…</p>}
      <ul className="mcp-tool-list">
        {tools.data?.map((candidate) => (
          <li key={candidate.name}>
            <button
              type="button"
              className={candidate.name === selected ? 'active' : ''}
              data-testid={`mcp-tool-${candidate.name}`}
              onClick={() => {
                setSelected(candidate.name)
                call.reset()
              }}
            >
              <code>{candidate.name}</code>
            </button>
            {candidate.description && <small> {candidate.description}</small>}
          </li>
        ))}
      </ul>
      {tool && (
        <>
          <ArgumentsForm
            key={tool.name}
            tool={tool}
            pending={call.isPending}
            onCall={(args, timeoutMs) =>
              call.mutate({ name: server, tool: tool.tool, args, ...(timeoutMs ? { timeoutMs } : {}) })
            }
          />
          <ErrorBox error={call.error} />
          {call.data && <CallResultView result={call.data} />}
        </>
      )}
      <RpcLogView server={server} />
    </section>
  )
}
