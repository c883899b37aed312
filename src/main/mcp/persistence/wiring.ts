import { join } from 'node:path'
import type { McpServerConfig } from '../../../shared/contract/mcp-config'
import type { TokenRecord } from '../auth/refresh-coordinator'
import type { FileContext } from '../config/parse'
import { bindingTarget, boundName, describeBinding, type SecretOwner } from './binding'
import { BoundSecrets } from './bound-secrets'
import { withLockFile } from './lock-file'
import type { SecretStore } from './store'

export interface SecretWiringOptions {
  store: SecretStore
  env: NodeJS.ProcessEnv
  /** Where the lock files that coordinate token refreshes with other processes go (null: no coordination). */
  lockDir: string | null
  /** The person's own entry of that name (below the workspace file), if any: its binding. */
  own: (name: string) => { binding: string | null } | undefined
  warn: (line: string) => void
}

/**
 * How the host's entries reach the secret store: placeholders read from it, OAuth tokens and clients loaded into the
 * entries and saved back, refreshes coordinated with other processes, tokens deleted at logout.
 */
export class SecretWiring {
  readonly secrets: BoundSecrets
  /** The entries in service by name, as their stored secrets and tokens know them. */
  owners = new Map<string, SecretOwner>()

  constructor(private readonly options: SecretWiringOptions) {
    // what an earlier version stored by name alone belongs to the person's own entry of that name
    this.secrets = new BoundSecrets(options.store, (owner) => owner.source !== 'workspace' || !options.own(owner.name))
  }

  /** What a file's placeholders read: the environment, the stored secrets of their entry, the inputs. */
  fileContext(): FileContext {
    return {
      env: this.options.env,
      secret: (kind, id, owner) =>
        kind === 'input' ? this.options.store.get(`input:${id}`) : this.secrets.secret(owner, id),
      missingSecret: async (field, owner) => {
        const own = owner.source === 'workspace' ? this.options.own(owner.name) : undefined
        const elsewhere =
          own?.binding && own.binding !== owner.binding
            ? ` (secrets stay with the URL or command line they were entered for: the one stored for ${owner.name} is for ${bindingTarget(own.binding)})`
            : ''
        return `the secret ${field} is not stored for ${describeBinding(owner)}: enter it again${elsewhere}`
      }
    }
  }

  /** The persisted tokens of a server and the lock file every Syncscope process takes before refreshing them. */
  tokenRecord(server: string): TokenRecord | null {
    const { lockDir } = this.options
    const owner = this.owners.get(server)
    if (!lockDir || !owner) return null
    return {
      read: () => this.secrets.tokens(owner),
      locked: (work) => withLockFile(join(lockDir, `mcp-tokens-${boundName(owner)}.lock`), work)
    }
  }

  /** After "log out" cleared the tokens in memory: the persisted ones go too. */
  async logout(server: string): Promise<void> {
    const owner = this.owners.get(server)
    if (!owner) return
    await this.secrets
      .logout(owner)
      .catch((error: unknown) =>
        this.options.warn(`could not delete the tokens of ${server}: ${(error as Error).message}`)
      )
  }

  /** authorizationCode servers get their stored tokens and client (of their name and URL), and save new ones. */
  async withPersistence(config: McpServerConfig, owner: SecretOwner): Promise<McpServerConfig> {
    if (config.transport !== 'http' || config.auth.mode !== 'authorizationCode' || config.auth.oauthProviderRef)
      return config
    const { warn } = this.options
    try {
      const persisted = await this.secrets.persistence(owner)
      const { auth } = config
      return {
        ...config,
        auth: {
          ...auth,
          ...((persisted.tokens ?? auth.tokens) ? { tokens: persisted.tokens ?? auth.tokens } : {}),
          ...((auth.client ?? persisted.client) ? { client: auth.client ?? persisted.client } : {}),
          onTokensChanged: async (tokens) => {
            await persisted
              .onTokensChanged(tokens)
              .catch((error: unknown) =>
                warn(`could not store the tokens of ${config.name}: ${(error as Error).message}`)
              )
            await auth.onTokensChanged?.(tokens)
          },
          onClientRegistered: async (client) => {
            await persisted
              .onClientRegistered(client)
              .catch((error: unknown) =>
                warn(`could not store the client of ${config.name}: ${(error as Error).message}`)
              )
            await auth.onClientRegistered?.(client)
          }
        }
      }
    } catch (error) {
      warn(
        `${this.options.store.description}: ${(error as Error).message}; ${config.name} keeps its tokens in memory only`
      )
      return config
    }
  }
}
