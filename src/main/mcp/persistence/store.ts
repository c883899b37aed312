/** Where secrets live: the OS keychain, or a 0600 JSON file where there is none. */
export interface SecretStore {
  readonly kind: 'keychain' | 'file'
  /** Which backend and, for a fallback, why: shown on the MCP page, by `syncscope mcp` and at start-up. */
  readonly description: string
  get(account: string): Promise<string | undefined>
  set(account: string, value: string): Promise<void>
  delete(account: string): Promise<void>
}
