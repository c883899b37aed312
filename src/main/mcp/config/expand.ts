import { homedir } from 'node:os'

export interface ExpandIssue {
  path: (string | number)[]
  message: string
}

export interface ExpandContext {
  env: NodeJS.ProcessEnv
  /** A secret the UI stored for this server (`${keychain:auth.key}`), or an input VS Code would prompt for (`${input:id}`). */
  secret(kind: 'keychain' | 'input', id: string): Promise<string | undefined>
}

/** Expanded when the stdio process is spawned, not when the file is read. */
const SPAWN_TIME = new Set(['workspaceRoot', 'workspaceFolder'])
const PLACEHOLDER = /\$\{([^}]+)\}/g
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

async function expandOne(expression: string, context: ExpandContext): Promise<string | { missing: string } | null> {
  if (SPAWN_TIME.has(expression)) return null
  if (expression === 'userHome') return homedir()
  const [prefix, rest] = [expression.slice(0, expression.indexOf(':')), expression.slice(expression.indexOf(':') + 1)]
  if (prefix === 'keychain' || prefix === 'input') {
    const value = await context.secret(prefix, rest)
    return (
      value ?? {
        missing:
          prefix === 'keychain'
            ? `the secret ${rest} is not in the secret store: enter it again`
            : `the input '${rest}' has no value`
      }
    )
  }
  const [name, fallback] = expression.startsWith('env:') ? [expression.slice(4), undefined] : splitDefault(expression)
  if (!ENV_NAME.test(name)) return null
  const value = context.env[name]
  if (value !== undefined) return value
  return fallback ?? { missing: `the environment variable ${name} is not set` }
}

function splitDefault(expression: string): [string, string | undefined] {
  const at = expression.indexOf(':-')
  return at < 0 ? [expression, undefined] : [expression.slice(0, at), expression.slice(at + 2)]
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
