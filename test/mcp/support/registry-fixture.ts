import { afterEach, beforeEach, expect } from 'vitest'
import { Registry } from '../../../src/main/mcp/registry'
import { startMcpHttpServer, type RunningMcpHttpServer } from './mcp-http-server'
import { authorizeInBrowser } from './oauth-server'
import { startProtectedServer } from './protected-server'

/** A registry per test, and the servers the test starts, stopped after it (last started, first stopped). */
export interface RegistryFixture {
  /** This test's registry (closed after it); a test may put another in its place. */
  registry: Registry
  /** The authorisation URLs the registry opened, with their server. */
  readonly opened: Array<{ url: string; server: string }>
  /** Run after the test, last pushed first. */
  readonly stops: Array<() => Promise<void>>
  /** An MCP server over streamable HTTP on loopback, stopped after the test. */
  resourceServer(gate: Parameters<typeof startMcpHttpServer>[0]): Promise<RunningMcpHttpServer>
  /** An MCP server behind a real authorisation server (oidc-provider) with these pre-registered clients. */
  protectedServer(clients?: Array<Record<string, unknown>>): ReturnType<typeof startProtectedServer>
  /** Follows the authorisation URL as a person would and delivers the redirect to the registry's loopback listener. */
  completeLogin(name: string): Promise<string>
}

export function useRegistryFixture(): RegistryFixture {
  const opened: Array<{ url: string; server: string }> = []
  const stops: Array<() => Promise<void>> = []
  let registry: Registry | undefined
  beforeEach(() => {
    opened.length = 0
    registry = new Registry({ openAuthorizeUrl: (url, server) => void opened.push({ url, server }) })
  })
  afterEach(async () => {
    await registry?.close()
    for (const stop of stops.splice(0).reverse()) await stop()
  })
  const fixture: RegistryFixture = {
    get registry() {
      if (!registry) throw new Error('the registry is made in beforeEach')
      return registry
    },
    set registry(next) {
      registry = next
    },
    opened,
    stops,
    async resourceServer(gate) {
      const server = await startMcpHttpServer(gate)
      stops.push(server.stop)
      return server
    },
    protectedServer: (clients = []) => startProtectedServer(stops, {}, { clients }),
    async completeLogin(name) {
      const { authorizeUrl } = await fixture.registry.login(name)
      const callback = await authorizeInBrowser(authorizeUrl)
      const done = fixture.registry.waitForLogin(name)
      const response = await fetch(callback)
      expect(await done).toBeNull()
      expect(response.status).toBe(200)
      return authorizeUrl
    }
  }
  return fixture
}
