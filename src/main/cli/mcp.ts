import { spawn } from 'node:child_process'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { ClientMetadataUrlSchema, type McpEntry } from '../../shared/contract/mcp'
import { defaultDataDir } from '../data-dir'
import { McpFailure, toToolError } from '../mcp/errors'
import { McpHost } from '../mcp/host'
import { runServer } from '../mcp/launcher'
import { detectSecretStore } from '../mcp/persistence/secret-store'
import { answerInCli } from './mcp-elicit'
import { exportCommand } from './mcp-export'
import { TOOLS_USAGE, toolsCommand } from './mcp-tools'
import { trustCommand, untrustedNote } from './mcp-trust'
import { UsageError, type Output } from './output'

export const MCP_USAGE = `syncscope mcp list [--json]                         the servers with their state
  ${TOOLS_USAGE}
  syncscope mcp call <server> <tool> [--args JSON] [--timeout MS] [--json] [--no-open] [--accept-defaults]
                                                     a server asking for a wider scope (403 insufficient_scope) gets
                                                     a login in the browser first (--no-open: the call fails, naming
                                                     the scope and the login command); a form the server asks the
                                                     person (elicitation) is cancelled, or with --accept-defaults
                                                     accepted with the defaults it gives
  syncscope mcp login <server> [--scope SCOPES] [--no-open]
                                                     run the OAuth login in the browser; tokens are stored
  syncscope mcp run <server>                         run a server on stdin/stdout for another host (Claude, VS Code…):
                                                     stdio servers with their secrets, remote ones bridged with tokens
  syncscope mcp export --to claude-desktop|claude-code|vscode|cursor [--server NAME]… [--yes] [--file PATH]
                                                     write entries calling \`mcp run\` into that host's config file;
                                                     shows the diff, --yes writes it
  syncscope mcp trust [--yes | --revoke] [--json]    review the workspace mcp.json (its servers, what they ask for);
                                                     --yes approves that content: until then nothing in it runs
options for all:
  --config FILE      read only this file (mcp.json, or a Claude/Cursor/VS Code config)
  --workspace DIR    workspace holding mcp.json (default: the current folder), layered over
  --data-dir DIR     the app data folder holding settings.json (default ${defaultDataDir()})
  --client-metadata-url URL
                     the app's client_id as the https URL of its client ID metadata document, for authorisation
                     servers that accept one (default: settings.json's mcp.clientMetadataUrl)`

const LOGIN_TIMEOUT_MS = 5 * 60_000
/** How long `mcp list` waits for servers to answer before it lists those still connecting as such. */
const LIST_WAIT_MS = 3_000

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    strict: true,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      workspace: { type: 'string' },
      'data-dir': { type: 'string' },
      'client-metadata-url': { type: 'string' },
      json: { type: 'boolean' },
      args: { type: 'string' },
      timeout: { type: 'string' },
      'no-open': { type: 'boolean' },
      scope: { type: 'string' },
      'accept-defaults': { type: 'boolean' },
      to: { type: 'string' },
      server: { type: 'string', multiple: true },
      file: { type: 'string' },
      yes: { type: 'boolean' },
      revoke: { type: 'boolean' },
      budget: { type: 'boolean' },
      format: { type: 'string' },
      'context-window': { type: 'string' },
      allow: { type: 'string', multiple: true },
      deny: { type: 'string', multiple: true },
      unset: { type: 'string', multiple: true },
      'expose-all': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' }
    }
  })
}

/** Opens a URL in the system browser; a machine without one still has the printed URL. */
function openInBrowser(url: string): void {
  const command = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open'
  const child = spawn(command, [url], { stdio: 'ignore', detached: true })
  child.on('error', () => {})
  child.unref()
}

/** The login URL on stderr, then the browser (unless `--no-open`): for `mcp login` and a step-up alike. */
function offerLogin(io: Output, server: string, url: string, open: boolean): void {
  const scope = new URL(url).searchParams.get('scope')
  io.err(
    `Open this URL to log in to ${server}${scope ? ` (scope "${scope}")` : ''}:\n  ${url}\nWaiting for the browser to come back…\n`
  )
  if (open) openInBrowser(url)
}

function describeEntry(entry: McpEntry): string {
  const detail = entry.error ? ` — ${entry.error.code}: ${entry.error.message}` : ''
  return `${entry.name.padEnd(20)} ${String(entry.transport ?? '?').padEnd(6)} ${entry.state.padEnd(12)} ${entry.source}${detail}`
}

/** The JSON shape scripts read: name, transport, state and, for errors, the error object. */
function listItem(entry: McpEntry) {
  return {
    name: entry.name,
    transport: entry.transport,
    state: entry.state,
    authMode: entry.authMode,
    source: entry.source,
    sourcePath: entry.sourcePath,
    ...(entry.error ? { error: entry.error } : {})
  }
}

function required(value: string | undefined, what: string): string {
  if (!value) throw new UsageError(`missing ${what}`)
  return value
}

function parseToolArgs(text: string | undefined): Record<string, unknown> {
  if (text === undefined) return {}
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    throw new UsageError(`--args is not valid JSON: ${(error as Error).message}`)
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new UsageError('--args must be a JSON object')
  return value as Record<string, unknown>
}

async function run(
  command: string,
  positionals: string[],
  values: ReturnType<typeof parse>['values'],
  host: McpHost,
  io: Output,
  dirs: { dataDir: string; workspaceDir: string }
): Promise<number> {
  const { registry } = host
  if (command === 'list') {
    // the servers connect in the background: the list waits a few seconds for their answers, not for their timeouts
    await registry.settled(LIST_WAIT_MS)
    const entries = registry.list()
    if (values.json) io.out(`${JSON.stringify(entries.map(listItem), null, 2)}\n`)
    else io.out(entries.length ? `${entries.map(describeEntry).join('\n')}\n` : 'no MCP servers configured\n')
    if (!values.json) io.err(`secrets: ${host.secretStore.description}\n`)
    for (const entry of entries.filter((candidate) => candidate.state === 'connecting'))
      io.err(`${entry.name}: no answer yet (still connecting after ${LIST_WAIT_MS / 1000} s)\n`)
    const badFiles = host.sources().filter((source) => source.error)
    for (const source of badFiles) io.err(`${source.path}: ${source.error}\n`)
    const note = untrustedNote(host.workspaceReview())
    if (note) io.err(note)
    // an invalid config is a failure for scripts too, as --json shows it: each bad entry is listed with its error
    const invalid = entries.filter((entry) => entry.error?.code === 'invalid_config')
    if (invalid.length > 0)
      io.err(
        `syncscope mcp: ${invalid.length} invalid ${invalid.length === 1 ? 'entry' : 'entries'}: ${invalid.map((entry) => entry.name).join(', ')}\n`
      )
    return badFiles.length > 0 || invalid.length > 0 ? 1 : 0
  }
  if (command === 'export') return exportCommand(registry, { ...values, ...dirs, configFile: host.configFile }, io)
  if (command === 'trust') return trustCommand(host, values, io)
  const server = required(positionals[0], 'the server name')
  if (command === 'run')
    return runServer(registry, server, {
      stdin: process.stdin,
      stdout: process.stdout,
      log: (line) => io.err(`syncscope mcp run: ${line}\n`)
    })
  if (command === 'tools') return toolsCommand(host, server, values, io)
  if (command === 'call') {
    const tool = required(positionals[1], 'the tool name')
    const timeoutMs = values.timeout === undefined ? undefined : Number(values.timeout)
    if (timeoutMs !== undefined && !(timeoutMs > 0))
      throw new UsageError('--timeout must be a positive number of milliseconds')
    const result = await registry.callTool(server, tool, parseToolArgs(values.args), timeoutMs ? { timeoutMs } : {})
    const text = (result.content ?? [])
      .map((part) => (part.type === 'text' ? part.text : JSON.stringify(part)))
      .join('\n')
    io.out(values.json ? `${JSON.stringify(result, null, 2)}\n` : `${text}\n`)
    return result.isError ? 1 : 0
  }
  if (command === 'login') {
    const finished = registry.waitForLogin(server)
    const { authorizeUrl } = await registry.login(server, values.scope ? { scope: values.scope } : {})
    if (!authorizeUrl) {
      io.out(`${server} is connected (the stored tokens still work)\n`)
      return 0
    }
    offerLogin(io, server, authorizeUrl, !values['no-open'])
    const timeout = new Promise<'timeout'>((done) => setTimeout(() => done('timeout'), LOGIN_TIMEOUT_MS).unref())
    const outcome = await Promise.race([finished, timeout])
    if (outcome === 'timeout')
      throw new McpFailure('needs_login', `no callback within ${LOGIN_TIMEOUT_MS / 60_000} minutes`)
    if (outcome) throw new McpFailure(outcome.code, outcome.message)
    io.out(`${server} is connected; tokens stored in ${host.secretStore.description}\n`)
    return 0
  }
  throw new UsageError(`unknown mcp command '${command}'`)
}

/** `syncscope mcp …`: the registry for people and scripts, on the same files and secret store as the app. */
export async function mcpMain(
  argv: string[],
  io: Output = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) }
): Promise<number> {
  let parsed: ReturnType<typeof parse>
  try {
    parsed = parse(argv)
  } catch (error) {
    io.err(`syncscope mcp: ${(error as Error).message}\n\n${MCP_USAGE}\n`)
    return 2
  }
  const [command, ...positionals] = parsed.positionals
  if (!command || parsed.values.help) {
    io.out(`usage:\n  ${MCP_USAGE}\n`)
    return parsed.values.help ? 0 : 2
  }
  const { values } = parsed
  // what this process writes (secrets file, approvals, lock files) is for this user only
  process.umask(0o077)
  const clientMetadataUrl = values['client-metadata-url']
  const checkedUrl = clientMetadataUrl === undefined ? null : ClientMetadataUrlSchema.safeParse(clientMetadataUrl)
  if (checkedUrl && !checkedUrl.success) {
    io.err(`syncscope mcp: --client-metadata-url ${checkedUrl.error.issues[0]?.message}\n`)
    return 2
  }
  const dataDir = resolve(values['data-dir'] ?? defaultDataDir())
  const workspace = resolve(values.workspace ?? process.cwd())
  const host: McpHost = new McpHost({
    workspace,
    settingsFile: join(dataDir, 'settings.json'),
    ...(values.config ? { configFile: resolve(values.config) } : {}),
    ...(clientMetadataUrl ? { clientMetadataUrl } : {}),
    secretStore: await detectSecretStore(join(dataDir, 'mcp-secrets.json')),
    // only \`list\` reports every server; the others use one and must not wait on the rest (a hung one takes its timeout)
    connectOnDemand: command !== 'list',
    connectInBackground: command === 'list',
    // nobody can fill in a form here: see answerInCli
    onElicitation: (elicitation) =>
      answerInCli(elicitation, host.registry.elicitations, Boolean(values['accept-defaults']), io),
    // a step-up (403 insufficient_scope) logs in as `mcp login` does; with --no-open it fails at once instead
    ...(command !== 'login' && !values['no-open']
      ? { openAuthorizeUrl: (url: string, server: string) => offerLogin(io, server, url, true) }
      : {}),
    log: (line) => io.err(`${line}\n`)
  })
  try {
    await host.start()
    return await run(command, positionals, values, host, io, { dataDir, workspaceDir: workspace })
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`syncscope mcp: ${error.message}\n\n${MCP_USAGE}\n`)
      return 2
    }
    const failure = toToolError(error)
    const stepUp =
      failure.code === 'insufficient_scope' && failure.scope
        ? `; run \`syncscope mcp login ${positionals[0]} --scope "${failure.scope}"\`, then try again`
        : ''
    io.err(`syncscope mcp: ${failure.code}: ${failure.message}${stepUp}\n`)
    return 1
  } finally {
    await host.close()
  }
}
