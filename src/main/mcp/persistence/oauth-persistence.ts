import {
  OAuthClientInfoSchema,
  OAuthTokensSchema,
  type OAuthClientInfo,
  type OAuthTokens
} from '../../../shared/contract/mcp-config'
import { readPrivateJson, withFileLock, writePrivateJson } from './file-store'
import { keychainStore } from './secret-store'
import type { SecretStore } from './store'

/** What a persistence helper returns: spread it into an authorizationCode auth config. */
export interface OAuthPersistence {
  tokens?: OAuthTokens
  client?: OAuthClientInfo
  onTokensChanged: (tokens: OAuthTokens) => Promise<void>
  onClientRegistered: (client: OAuthClientInfo) => Promise<void>
}

export const tokensAccount = (server: string) => `tokens:${server}`
export const clientAccount = (server: string) => `client:${server}`

function parseStored<T>(
  text: string | undefined,
  schema: { safeParse(value: unknown): { success: true; data: T } | { success: false } }
): T | undefined {
  if (text === undefined) return undefined
  try {
    const parsed = schema.safeParse(JSON.parse(text))
    return parsed.success ? parsed.data : undefined
  } catch {
    return undefined
  }
}

/** The tokens stored for a server now (another process may have rotated them since they were first read). */
export async function readStoredTokens(store: SecretStore, server: string): Promise<OAuthTokens | undefined> {
  return parseStored(await store.get(tokensAccount(server)), OAuthTokensSchema)
}

/** Tokens and client of one server in a secret store (accounts `tokens:<server>` and `client:<server>`). */
export async function storePersistence(store: SecretStore, server: string): Promise<OAuthPersistence> {
  const tokens = await readStoredTokens(store, server)
  const client = parseStored(await store.get(clientAccount(server)), OAuthClientInfoSchema)
  return {
    ...(tokens ? { tokens } : {}),
    ...(client ? { client } : {}),
    onTokensChanged: (next) => store.set(tokensAccount(server), JSON.stringify(next)),
    onClientRegistered: (next) => store.set(clientAccount(server), JSON.stringify(next))
  }
}

/** Deletes a server's persisted tokens (log out) and, with `client`, its registration too (server removed). */
export async function forgetPersisted(store: SecretStore, server: string, what: { client: boolean }): Promise<void> {
  await store.delete(tokensAccount(server))
  if (what.client) await store.delete(clientAccount(server))
}

/** OS keychain persistence: service `service-agents`; throws where there is no keychain. */
export async function keychainPersistence(options: { server: string; service?: string }): Promise<OAuthPersistence> {
  return storePersistence(await keychainStore(options.service ? { service: options.service } : {}), options.server)
}

/**
 * A 0600 JSON file `{ "tokens": { "<server>": … }, "client": { "<server>": … } }` for CI and containers without a
 * keychain; a file with looser permissions is refused.
 */
export async function filePersistence(options: { path: string; server: string }): Promise<OAuthPersistence> {
  const { path, server } = options
  const root = await readPrivateJson(path)
  const section = (key: 'tokens' | 'client') => ((root[key] ?? {}) as Record<string, unknown>)[server]
  const tokens = OAuthTokensSchema.safeParse(section('tokens'))
  const client = OAuthClientInfoSchema.safeParse(section('client'))
  const save = (key: 'tokens' | 'client', value: unknown) =>
    withFileLock(path, async () => {
      const current = await readPrivateJson(path)
      const map = { ...((current[key] ?? {}) as Record<string, unknown>), [server]: value }
      await writePrivateJson(path, { ...current, [key]: map })
    })
  return {
    ...(tokens.success ? { tokens: tokens.data } : {}),
    ...(client.success ? { client: client.data } : {}),
    onTokensChanged: (next) => save('tokens', next),
    onClientRegistered: (next) => save('client', next)
  }
}
