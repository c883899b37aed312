import type { OAuthTokens } from '../../../shared/contract/mcp'
import { boundName, secretAccount, type SecretOwner } from './binding'
import {
  clientAccount,
  forgetPersisted,
  readStoredTokens,
  storePersistence,
  tokensAccount,
  type OAuthPersistence
} from './oauth-persistence'
import type { SecretStore } from './secret-store'

/**
 * A server's typed-in secrets, OAuth tokens and registered client, kept under its name and binding (see binding.ts).
 * What an earlier version stored under the name alone is moved, when first asked for, to an owner `adopts` accepts
 * (the person's own entry of that name), and never handed to any other.
 */
export class BoundSecrets {
  constructor(
    readonly store: SecretStore,
    private readonly adopts: (owner: SecretOwner) => boolean
  ) {}

  async secret(owner: SecretOwner, field: string): Promise<string | undefined> {
    const account = secretAccount(boundName(owner), field)
    const value = await this.store.get(account)
    if (value !== undefined || !this.adopts(owner)) return value
    return this.adopt(secretAccount(owner.name, field), account)
  }

  setSecret(owner: Pick<SecretOwner, 'name' | 'binding'>, field: string, value: string): Promise<void> {
    return this.store.set(secretAccount(boundName(owner), field), value)
  }

  /** The person's own edit (a rename, a new URL): the secrets typed in for the entry go with it. */
  async copySecrets(from: SecretOwner, to: SecretOwner, fields: string[]): Promise<void> {
    for (const field of fields) {
      const value = await this.secret(from, field)
      if (value !== undefined) await this.setSecret(to, field, value)
    }
  }

  /** OAuth tokens and client of an authorizationCode entry, with callbacks that store new ones. */
  async persistence(owner: SecretOwner): Promise<OAuthPersistence> {
    const server = boundName(owner)
    if (this.adopts(owner)) {
      for (const account of [tokensAccount, clientAccount])
        if ((await this.store.get(account(server))) === undefined)
          await this.adopt(account(owner.name), account(server))
    }
    return storePersistence(this.store, server)
  }

  tokens(owner: SecretOwner): Promise<OAuthTokens | undefined> {
    return readStoredTokens(this.store, boundName(owner))
  }

  /** Log out: the tokens go, the registration stays. */
  logout(owner: SecretOwner): Promise<void> {
    return forgetPersisted(this.store, boundName(owner), { client: false })
  }

  /**
   * The server is removed: its secrets, tokens and client, and what an earlier version stored by its name when they
   * were this entry's to adopt (never those of the person's own entry a removed workspace entry shadowed).
   */
  async forget(owner: SecretOwner, fields: string[]): Promise<void> {
    for (const server of this.adopts(owner) ? [boundName(owner), owner.name] : [boundName(owner)]) {
      await forgetPersisted(this.store, server, { client: true }).catch(() => {})
      for (const field of fields) await this.store.delete(secretAccount(server, field)).catch(() => {})
    }
  }

  private async adopt(legacy: string, account: string): Promise<string | undefined> {
    const value = await this.store.get(legacy)
    if (value === undefined) return undefined
    await this.store.set(account, value)
    await this.store.delete(legacy)
    return value
  }
}
