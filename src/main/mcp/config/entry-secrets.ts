import { McpFailure } from '../errors'
import { isLiteralSecret, MASK } from '../mask'

const KEYCHAIN_PLACEHOLDER = /\$\{keychain:([^}]+)\}/g

/** The fields an entry reads from the secret store (`${keychain:<field>}`). */
export function keychainFields(entry: unknown): string[] {
  return [...JSON.stringify(entry).matchAll(KEYCHAIN_PLACEHOLDER)].map((match) => match[1] ?? '')
}

/** The UI shows MASK for secrets; saving MASK back means "keep what is stored". */
export function restoreMasked(
  value: Record<string, unknown>,
  existing: Record<string, unknown> | null,
  path: string[] = []
): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, child] of Object.entries(value)) {
    const before = existing?.[key]
    if (child === MASK) {
      if (before === undefined)
        throw new McpFailure(
          'invalid_config',
          `${[...path, key].join('.')}: enter the secret (nothing is stored for it yet)`,
          { path: [...path, key] }
        )
      out[key] = before
    } else if (child && typeof child === 'object' && !Array.isArray(child)) {
      out[key] = restoreMasked(
        child as Record<string, unknown>,
        before && typeof before === 'object' ? (before as Record<string, unknown>) : null,
        [...path, key]
      )
    } else {
      out[key] = child
    }
  }
  return out
}

/**
 * An entry as it is written to a file: each literal secret replaced by `${keychain:<field>}`, and the secrets taken
 * out (field → value) for the secret store.
 */
export function extractSecrets(value: Record<string, unknown>): {
  entry: Record<string, unknown>
  secrets: Map<string, string>
} {
  const secrets = new Map<string, string>()
  const walk = (node: Record<string, unknown>, path: string[]): Record<string, unknown> => {
    const out: Record<string, unknown> = {}
    for (const [key, child] of Object.entries(node)) {
      const at = [...path, key]
      if (isLiteralSecret(key, child) && at[0] !== 'transport') {
        secrets.set(at.join('.'), child)
        out[key] = `\${keychain:${at.join('.')}}`
      } else if (child && typeof child === 'object' && !Array.isArray(child)) {
        out[key] = walk(child as Record<string, unknown>, at)
      } else {
        out[key] = child
      }
    }
    return out
  }
  return { entry: walk(value, []), secrets }
}
