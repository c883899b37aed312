import type { FieldSpec } from './entry-form'
import { displayValue, parseValue } from './entry-form'

interface SchemaFieldsProps {
  fields: FieldSpec[]
  value: Record<string, unknown>
  onChange: (next: Record<string, unknown>) => void
  issues: Record<string, string>
  /** Dotted prefix of these fields in the entry (`auth.`), for matching issues and test ids. */
  prefix?: string
}

/** Inputs generated from a schema's fields, each with its validation message right under it. */
export function SchemaFields({ fields, value, onChange, issues, prefix = '' }: SchemaFieldsProps) {
  const set = (field: FieldSpec, text: string | boolean) => {
    const next = { ...value }
    const parsed = parseValue(field, text)
    if (parsed === undefined) delete next[field.key]
    else next[field.key] = parsed
    onChange(next)
  }
  return (
    <>
      {fields.map((field) => {
        const id = `mcp-field-${prefix}${field.key}`
        const issue = issues[`${prefix}${field.key}`]
        const multiline = field.kind === 'lines' || field.kind === 'pairs' || field.kind === 'secretText'
        return (
          <label key={field.key} className="mcp-field">
            <span>
              {field.key}
              {field.optional ? '' : ' *'}
              {field.kind === 'lines' && <small> one per line</small>}
              {field.kind === 'pairs' && <small> NAME=value per line</small>}
              {field.kind === 'secretText' && <small> PEM, pasted whole; kept in the secret store</small>}
            </span>
            {field.kind === 'choice' ? (
              <select
                data-testid={id}
                value={String(value[field.key] ?? '')}
                onChange={(event) => set(field, event.target.value)}
              >
                <option value="">{field.optional ? '(default)' : '—'}</option>
                {field.options?.map((option) => (
                  <option key={option}>{option}</option>
                ))}
              </select>
            ) : field.kind === 'boolean' ? (
              <input
                type="checkbox"
                data-testid={id}
                checked={value[field.key] === true}
                onChange={(event) => set(field, event.target.checked)}
              />
            ) : multiline ? (
              <textarea
                data-testid={id}
                rows={field.kind === 'secretText' ? 6 : 3}
                className={field.kind === 'secretText' ? 'mcp-secret-text' : undefined}
                spellCheck={false}
                autoComplete="off"
                value={displayValue(field, value[field.key])}
                onChange={(event) => set(field, event.target.value)}
              />
            ) : (
              <input
                data-testid={id}
                type={field.kind === 'secret' ? 'password' : field.kind === 'number' ? 'number' : 'text'}
                autoComplete="off"
                value={displayValue(field, value[field.key])}
                onChange={(event) => set(field, event.target.value)}
              />
            )}
            {issue && (
              <em className="mcp-issue" role="alert" data-testid={`${id}-issue`}>
                {issue}
              </em>
            )}
          </label>
        )
      })}
    </>
  )
}
