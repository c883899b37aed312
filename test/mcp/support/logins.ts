import { expect } from 'vitest'
import type { Registry } from '../../../src/main/mcp/registry'
import { authorizeInBrowser } from './oidc-browser'

/**
 * An `openAuthorizeUrl` standing in for a person at the browser: logs in at once on oidc-provider's screens and
 * delivers the redirect to the registry's callback; every URL it was given goes to `opened`.
 */
export function browserThatLogsIn(opened: string[]): (url: string) => void {
  return (url) => {
    opened.push(url)
    void authorizeInBrowser(url).then((callback) => fetch(callback))
  }
}

/** Logs `name` in through the registry's browser and expects the login to end connected. */
export async function loggedIn(registry: Registry, name: string): Promise<void> {
  const done = registry.waitForLogin(name)
  await registry.login(name)
  expect(await done).toBeNull()
}
