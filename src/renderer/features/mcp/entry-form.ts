import type { z } from 'zod'
import { McpAuthConfigSchema, McpServerEntrySchema } from '../../../shared/contract/mcp'

/** `secretText`: a secret of several lines (a PEM private key); `choice`: one of the schema's `options`. */
export type FieldKind = 'string' | 'secret' | 'secretText' | 'number' | 'boolean' | 'choice' | 'lines' | 'pairs'

export interface FieldSpec {
  key: string
  kind: FieldKind
  optional: boolean
  options?: string[]
}

type AnySchema = z.ZodType & {
  _zod: { def: { type: string; innerType?: AnySchema; values?: unknown[]; entries?: Record<string, string> } }
}
type ObjectSchema = z.ZodObject & { shape: Record<string, AnySchema> }

const SECRET_KEYS = new Set(['key', 'clientSecret'])
const SECRET_TEXT_KEYS = new Set(['privateKey'])

const stringKind = (key: string): FieldKind =>
  SECRET_TEXT_KEYS.has(key) ? 'secretText' : SECRET_KEYS.has(key) ? 'secret' : 'string'

function unwrap(schema: AnySchema): { schema: AnySchema; optional: boolean } {
  let current = schema
  let optional = false
  while (['optional', 'default', 'nullable'].includes(current._zod.def.type) && current._zod.def.innerType) {
    optional = true
    current = current._zod.def.innerType
  }
  return { schema: current, optional }
}

/** The form fields of one object schema: what a person can type (callbacks and nested records stay for the JSON editor). */
export function fieldsOf(schema: ObjectSchema, skip: string[] = []): FieldSpec[] {
  const fields: FieldSpec[] = []
  for (const [key, raw] of Object.entries(schema.shape)) {
    if (skip.includes(key)) continue
    const { schema: inner, optional } = unwrap(raw)
    const type = inner._zod.def.type
    if (type === 'string') fields.push({ key, kind: stringKind(key), optional })
    else if (type === 'enum')
      fields.push({ key, kind: 'choice', optional, options: Object.values(inner._zod.def.entries ?? {}) })
    else if (type === 'number') fields.push({ key, kind: 'number', optional })
    else if (type === 'boolean') fields.push({ key, kind: 'boolean', optional })
    else if (type === 'array') fields.push({ key, kind: 'lines', optional })
    else if (type === 'record') fields.push({ key, kind: 'pairs', optional })
  }
  return fields
}

const variants = (union: z.ZodDiscriminatedUnion) => union.options as unknown as ObjectSchema[]

/** The variant of a discriminated union whose literal matches `value`. */
function variantFor(union: z.ZodDiscriminatedUnion, key: string, value: string): ObjectSchema | undefined {
  return variants(union).find((variant) => {
    const literal = variant.shape[key]?._zod.def.values
    return Array.isArray(literal) && literal.includes(value)
  })
}

export const transportFields = (transport: string) => {
  const variant = variantFor(McpServerEntrySchema as unknown as z.ZodDiscriminatedUnion, 'transport', transport)
  return variant ? fieldsOf(variant, ['transport', 'auth']) : []
}

export const authFields = (mode: string) => {
  const variant = variantFor(McpAuthConfigSchema as unknown as z.ZodDiscriminatedUnion, 'mode', mode)
  return variant ? fieldsOf(variant, ['mode']) : []
}

export const AUTH_MODES = ['none', 'apiKey', 'clientCredentials', 'authorizationCode'] as const

/** What a field shows in its input. */
export function displayValue(field: FieldSpec, value: unknown): string {
  if (value === undefined || value === null) return ''
  if (field.kind === 'lines' && Array.isArray(value)) return value.join('\n')
  if (field.kind === 'pairs' && typeof value === 'object')
    return Object.entries(value as Record<string, string>)
      .map(([k, v]) => `${k}=${v}`)
      .join('\n')
  return String(value)
}

/** The typed value of a field's text; empty optional fields are left out. */
export function parseValue(field: FieldSpec, text: string | boolean): unknown {
  if (field.kind === 'boolean') return text === true ? true : undefined
  const value = String(text)
  if (value.trim() === '') return undefined
  if (field.kind === 'number') return Number(value)
  if (field.kind === 'lines') return value.split('\n').filter((line) => line !== '')
  if (field.kind === 'pairs') {
    return Object.fromEntries(
      value
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => {
          const at = line.search(/[=:]/)
          return at < 0 ? [line.trim(), ''] : [line.slice(0, at).trim(), line.slice(at + 1).trim()]
        })
    )
  }
  return value
}

/** Validation issues keyed by dotted path (`url`, `auth.key`), as the form shows them next to fields. */
export function issuesOf(entry: unknown): Record<string, string> {
  const parsed = McpServerEntrySchema.safeParse(entry)
  if (parsed.success) return {}
  const issues: Record<string, string> = {}
  for (const issue of parsed.error.issues) {
    const path = issue.path.map(String).join('.') || 'entry'
    issues[path] ??= issue.message
  }
  return issues
}
