// The few parts of oidc-provider (which ships no types) that the test authorisation server uses.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http'

  interface Client {
    grantTypeAllowed(grant: string): boolean
  }
  interface KoaContext {
    method: string
    path: string
    status: number
  }
  export default class Provider {
    constructor(
      issuer: string,
      configuration: Record<string, unknown> & {
        issueRefreshToken?: (ctx: unknown, client: Client, code: unknown) => Promise<boolean>
        findAccount?: (
          ctx: unknown,
          id: string
        ) => Promise<{ accountId: string; claims(): Promise<Record<string, unknown>> }>
      }
    )
    use(middleware: (ctx: KoaContext, next: () => Promise<void>) => Promise<void>): void
    callback(): (req: IncomingMessage, res: ServerResponse) => void
  }
}
