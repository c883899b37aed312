import { join } from 'node:path'
import type { RoomContext } from '../rooms'
import { McpHost } from './host'
import { detectSecretStore } from './persistence/secret-store'

export type McpRoom = McpHost

/**
 * The app's MCP registry: `<workspace>/mcp.json` (once the person approved its content) over
 * `<dataDir>/settings.json`, watched; secrets in the OS keychain,
 * or `<dataDir>/mcp-secrets.json` (0600; in the Electron shell encrypted with safeStorage) where there is none. OAuth
 * redirects come back to a loopback listener the registry opens on 127.0.0.1; the authorisation URL goes to the UI
 * (`mcp.authorize`), which opens it in a new tab (the Electron shell hands new windows to the system browser).
 */
export async function startMcpRoom(context: RoomContext): Promise<McpRoom> {
  const { serve, events, log, secretFileEncryption } = context
  const secretStore = await detectSecretStore(
    join(serve.dataDir, 'mcp-secrets.json'),
    secretFileEncryption ? { encryption: secretFileEncryption } : {}
  )
  const host = new McpHost({
    workspace: serve.workspace,
    settingsFile: join(serve.dataDir, 'settings.json'),
    secretStore,
    watch: true,
    connectInBackground: true,
    log,
    openAuthorizeUrl: (url, name) => events.emit('mcp.authorize', { name, url }),
    onChange: (names) => events.emit('mcp.changed', { names }),
    onOAuthExchange: (name, exchange) => events.emit('mcp.oauthStep', { name, exchange }),
    onRpcMessage: (name, message) => events.emit('mcp.rpc', { name, message }),
    onElicitation: (elicitation) => events.emit('mcp.elicitation', elicitation)
  })
  await host.start()
  context.onClose.push(() => host.close())
  const count = host.registry.list().length
  context.banner.push(
    `MCP servers   ${count} from ${join(serve.workspace, 'mcp.json')} and settings.json (secrets: ${secretStore.description})`
  )
  const review = host.workspaceReview()
  if (review && review.state !== 'trusted')
    context.banner.push(
      `              ${review.path} ${review.state === 'changed' ? 'changed since you approved it' : 'is not approved'}: its servers do not run until you approve it (the MCP page, or \`syncscope mcp trust\`)`
    )
  return host
}
