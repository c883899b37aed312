import { homedir } from 'node:os'
import type { Placeholder } from '../../../shared/contract/mcp'

export interface ExpandIssue {
  path: (string | number)[]
  message: string
}

export interface ExpandContext {
  env: NodeJS.ProcessEnv
  /** A secret the UI stored for this server (`${keychain:auth.key}`), or an input VS Code would prompt for (`${input:id}`). */
  secret(kind: 'keychain' | 'input', id: string): Promise<string | undefined>
  /** Why a `${keychain:field}` has no value, when the context knows better than "not in the secret store". */
  missingSecret?(field: string): Promise<string | undefined>
}

/** Expanded when the stdio process is spawned, not when the file is read. */
const SPAWN_TIME = new Set(['workspaceRoot', 'workspaceFolder'])
const PLACEHOLDER = /\$\{([^}]+)\}/g
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** What one `${…}` expression reads; null for what is left as written (spawn-time names, unknown forms). */
type Source =
  | { kind: 'userHome' }
  | { kind: 'keychain'; id: string }
  | { kind: 'input'; id: string }
  | { kind: 'env'; name: string; fallback: string | undefined }

function sourceOf(expression: string): Source | null {
  if (SPAWN_TIME.has(expression)) return null
  if (expression === 'userHome') return { kind: 'userHome' }
  const colon = expression.indexOf(':')
  const prefix = expression.slice(0, colon)
  if (colon > 0 && prefix === 'keychain') return { kind: 'keychain', id: expression.slice(colon + 1) }
  if (colon > 0 && prefix === 'input') return { kind: 'input', id: expression.slice(colon + 1) }
  const [name, fallback] = expression.startsWith('env:') ? [expression.slice(4), undefined] : splitDefault(expression)
  return ENV_NAME.test(name) ? { kind: 'env', name, fallback } : null
}

async function expandOne(expression: string, context: ExpandContext): Promise<string | { missing: string } | null> {
  const source = sourceOf(expression)
  if (source === null) return null
  if (source.kind === 'userHome') return homedir()
  if (source.kind === 'keychain' || source.kind === 'input') {
    const value = await context.secret(source.kind, source.id)
    if (value !== undefined) return value
    if (source.kind === 'input') return { missing: `the input '${source.id}' has no value` }
    const why = await context.missingSecret?.(source.id)
    return { missing: why ?? `the secret ${source.id} is not in the secret store: enter it again` }
  }
  const value = context.env[source.name]
  if (value !== undefined) return value
  return source.fallback ?? { missing: `the environment variable ${source.name} is not set` }
}

function splitDefault(expression: string): [string, string | undefined] {
  const at = expression.indexOf(':-')
  return at < 0 ? [expression, undefined] : [expression.slice(0, at), expression.slice(at + 2)]
}

/** Every placeholder in the strings of a value that would read something (spawn-time names aside), each once. */
export function placeholdersIn(value: unknown): Placeholder[] {
  const found = new Map<string, Placeholder>()
  const walk = (node: unknown): void => {
    if (typeof node === 'string') {
      for (const match of node.matchAll(PLACEHOLDER)) {
        const source = sourceOf(match[1] ?? '')
        if (!source) continue
        const placeholder: Placeholder = {
          kind: source.kind,
          name: source.kind === 'userHome' ? '' : source.kind === 'env' ? source.name : source.id
        }
        found.set(`${placeholder.kind}:${placeholder.name}`, placeholder)
      }
    } else if (Array.isArray(node)) node.forEach(walk)
    else if (node && typeof node === 'object') Object.values(node).forEach(walk)
  }
  walk(value)
  return [...found.values()]
}

async function expandString(
  text: string,
  path: (string | number)[],
  context: ExpandContext,
  issues: ExpandIssue[]
): Promise<string> {
  let result = ''
  let last = 0
  for (const match of text.matchAll(PLACEHOLDER)) {
    const replacement = await expandOne(match[1] ?? '', context)
    result += text.slice(last, match.index)
    if (replacement === null) result += match[0]
    else if (typeof replacement === 'string') result += replacement
    else issues.push({ path, message: `${match[0]}: ${replacement.missing}` })
    last = match.index + match[0].length
  }
  return result + text.slice(last)
}

/**
 * Expands `${VAR}`, `${VAR:-default}`, `${env:VAR}`, `${userHome}`, `${input:id}` and `${keychain:field}` in every string
 * of a value (keys are left alone); `${workspaceRoot}` / `${workspaceFolder}` stay for spawn time. Unset variables are
 * reported, never replaced by an empty string.
 */
export async function expandPlaceholders(
  value: unknown,
  context: ExpandContext,
  path: (string | number)[] = []
): Promise<{ value: unknown; issues: ExpandIssue[] }> {
  const issues: ExpandIssue[] = []
  const walk = async (node: unknown, at: (string | number)[]): Promise<unknown> => {
    if (typeof node === 'string') return expandString(node, at, context, issues)
    if (Array.isArray(node)) return Promise.all(node.map((item, index) => walk(item, [...at, index])))
    if (node && typeof node === 'object') {
      const out: Record<string, unknown> = {}
      for (const [key, child] of Object.entries(node)) out[key] = await walk(child, [...at, key])
      return out
    }
    return node
  }
  return { value: await walk(value, path), issues }
}

/** `${workspaceRoot}` (and VS Code's `${workspaceFolder}`) in stdio arguments and cwd. */
export function expandWorkspaceRoot(text: string, workspaceRoot: string): string {
  return text.replace(/\$\{(workspaceRoot|workspaceFolder)\}/g, workspaceRoot)
}
