import { useState, type FormEvent } from 'react'
import type { McpElicitation } from '../../../shared/contract/mcp'
import { formDefaults } from '../../../shared/mcp-elicitation'
import { ErrorBox } from '../../components/ErrorBox'
import { useCall, useCallMutation } from '../../hooks'

interface Property {
  type?: string
  title?: string
  description?: string
  enum?: string[]
}

type Answer = string | number | boolean

/** The typed answer of one field; empty fields are left out (the server's schema says which it requires). */
function answerOf(property: Property, text: string): Answer | undefined {
  if (text === '') return undefined
  if (property.type === 'boolean') return text === 'true'
  if (property.type === 'number' || property.type === 'integer') return Number(text)
  return text
}

function ElicitationForm({ elicitation }: { elicitation: McpElicitation }) {
  const answer = useCallMutation('mcp.answerElicitation', ['mcp.elicitations'])
  const properties = (elicitation.requestedSchema?.properties ?? {}) as Record<string, Property>
  const required = new Set((elicitation.requestedSchema?.required as string[] | undefined) ?? [])
  // filled in with the defaults the form gives (SEP-1034); a field emptied is left out, and gets its default in main
  const [values, setValues] = useState<Record<string, string>>(() =>
    Object.fromEntries(
      Object.entries(formDefaults(elicitation.requestedSchema)).flatMap(([key, value]) =>
        Array.isArray(value) ? [] : [[key, String(value)]]
      )
    )
  )
  const accept = (event: FormEvent) => {
    event.preventDefault()
    const content: Record<string, Answer> = {}
    for (const [key, property] of Object.entries(properties)) {
      const value = answerOf(property, values[key] ?? '')
      if (value !== undefined) content[key] = value
    }
    answer.mutate({ id: elicitation.id, action: 'accept', content })
  }
  return (
    <form onSubmit={accept} className="mcp-elicitation" data-testid="mcp-elicitation">
      <p>
        <strong>{elicitation.server}</strong> asks: {elicitation.message}
      </p>
      {elicitation.mode === 'url' && elicitation.url && (
        <p>
          <a href={elicitation.url} target="_blank" rel="noopener noreferrer">
            {elicitation.url}
          </a>
        </p>
      )}
      {Object.entries(properties).map(([key, property]) => {
        const set = (value: string) => setValues((current) => ({ ...current, [key]: value }))
        const options = property.type === 'boolean' ? ['true', 'false'] : property.enum
        return (
          <label key={key} className="mcp-field">
            <span>
              {property.title ?? key}
              {required.has(key) ? ' *' : ''} <small>{property.type ?? 'string'}</small>
            </span>
            {options ? (
              <select
                data-testid={`mcp-elicit-${key}`}
                value={values[key] ?? ''}
                onChange={(event) => set(event.target.value)}
              >
                <option value="">—</option>
                {options.map((option) => (
                  <option key={option}>{option}</option>
                ))}
              </select>
            ) : (
              <input
                data-testid={`mcp-elicit-${key}`}
                type={property.type === 'number' || property.type === 'integer' ? 'number' : 'text'}
                value={values[key] ?? ''}
                onChange={(event) => set(event.target.value)}
              />
            )}
            {property.description && <small>{property.description}</small>}
          </label>
        )
      })}
      <ErrorBox error={answer.error} />
      <button type="submit" disabled={answer.isPending} data-testid="mcp-elicit-accept">
        Answer
      </button>{' '}
      <button
        type="button"
        disabled={answer.isPending}
        onClick={() => answer.mutate({ id: elicitation.id, action: 'decline' })}
      >
        Decline
      </button>{' '}
      <button
        type="button"
        disabled={answer.isPending}
        onClick={() => answer.mutate({ id: elicitation.id, action: 'cancel' })}
      >
        Cancel
      </button>
    </form>
  )
}

/** Questions servers ask while a tool runs (elicitation/create), each answered here. */
export function Elicitations() {
  // kept current by the 'mcp.elicitation' events (useEventsIntoCache)
  const pending = useCall('mcp.elicitations', {})
  if (!pending.data?.length) return null
  return (
    <section className="panel" aria-label="Questions from servers" data-testid="mcp-elicitations">
      <h2>Questions from servers</h2>
      {pending.data.map((elicitation) => (
        <ElicitationForm key={elicitation.id} elicitation={elicitation} />
      ))}
    </section>
  )
}
