// The conformance suite's client (`conformance client --command "node --import tsx client.ts"`): Syncscope's own
// CLI used as a person would. The suite appends the server URL and sets MCP_CONFORMANCE_SCENARIO (and, for some,
// MCP_CONFORMANCE_CONTEXT). The client writes the server into an mcp.json of its own, logs in where the server needs
// it (`syncscope mcp login`: the browser it opens is support/stand-in-browser.ts), lists the tools and calls them
// (`syncscope mcp tools`, `syncscope mcp call --accept-defaults`). Nothing here speaks MCP or OAuth itself.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { z } from 'zod'
import { startMcpCli, type CliRun, type RunningCli } from '../support/run-cli'
import { installStandInBrowser, type StandInBrowser } from '../support/stand-in-browser'

const SERVER = 'conformance'
/** The app's client ID metadata document URL the suite's authorisation servers know (scenario auth/basic-cimd). */
const CLIENT_METADATA_URL = 'https://conformance-test.local/client-metadata.json'
/** What a person would pass to the suite's tools that take arguments. */
const TOOL_ARGUMENTS: Record<string, Record<string, unknown>> = { add_numbers: { a: 5, b: 3 } }

const ContextSchema = z.looseObject({
  client_id: z.string().optional(),
  client_secret: z.string().optional(),
  private_key_pem: z.string().optional(),
  signing_algorithm: z.string().optional()
})
type Context = z.infer<typeof ContextSchema>

const ToolsSchema = z.array(z.object({ tool: z.string() }))

const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? ''
const serverUrl = process.argv.at(-1) ?? ''
const context = ContextSchema.parse(JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}'))
const dir = mkdtempSync(join(tmpdir(), 'syncscope-conformance-'))

/** The server as a person writes it: secrets as `${VAR}` placeholders, their values in the CLI's environment. */
function entryFor(context: Context): { entry: Record<string, unknown>; env: Record<string, string> } {
  const { client_id: clientId, client_secret: secret, private_key_pem: key, signing_algorithm: alg } = context
  const http = { transport: 'http', url: serverUrl }
  if (scenario.startsWith('auth/client-credentials-')) {
    const auth = key
      ? { mode: 'clientCredentials', clientId, privateKey: '${CONFORMANCE_PRIVATE_KEY}', signingAlgorithm: alg }
      : { mode: 'clientCredentials', clientId, clientSecret: '${CONFORMANCE_CLIENT_SECRET}' }
    return {
      entry: { ...http, auth },
      env: {
        ...(key ? { CONFORMANCE_PRIVATE_KEY: key } : {}),
        ...(secret ? { CONFORMANCE_CLIENT_SECRET: secret } : {})
      }
    }
  }
  if (scenario.startsWith('auth/')) {
    const client = clientId ? { clientId, clientSecret: '${CONFORMANCE_CLIENT_SECRET}' } : undefined
    return {
      entry: { ...http, auth: { mode: 'authorizationCode', ...(client ? { client } : {}) } },
      env: secret ? { CONFORMANCE_CLIENT_SECRET: secret } : {}
    }
  }
  return { entry: { ...http, auth: { mode: 'none' } }, env: {} }
}

const { entry, env: secrets } = entryFor(context)
const configFile = join(dir, 'mcp.json')
writeFileSync(configFile, JSON.stringify({ servers: { [SERVER]: entry } }, null, 2))

/** The CLI run in progress: ended with this client when the suite ends it (its time is up). */
let running: RunningCli | null = null
process.on('SIGTERM', () => {
  running?.stop()
  rmSync(dir, { recursive: true, force: true })
  process.exit(1)
})

/** `syncscope mcp …` on this server's file, the stand-in browser first on PATH, its output echoed to stderr. */
async function run(args: string[], browser: StandInBrowser): Promise<CliRun> {
  running = startMcpCli(
    [
      ...args,
      '--config',
      configFile,
      '--data-dir',
      join(dir, 'data'),
      ...(scenario.startsWith('auth/') ? ['--client-metadata-url', CLIENT_METADATA_URL] : [])
    ],
    { cwd: dir, env: { ...secrets, PATH: browser.path } }
  )
  const step = await running.exited
  process.stderr.write(`$ syncscope mcp ${args.join(' ')}  → exit ${step.code}\n${step.stdout}${step.stderr}`)
  return step
}

async function main(): Promise<number> {
  const browser = await installStandInBrowser(dir)
  const syncscope = (args: string[]) => run(args, browser)
  const mode = (entry.auth as { mode: string }).mode
  if (mode === 'authorizationCode') {
    const login = await syncscope(['login', SERVER])
    if (login.code !== 0) return 1
  }
  const listed = await syncscope(['tools', SERVER, '--json'])
  if (listed.code !== 0) return 1
  for (const { tool } of ToolsSchema.parse(JSON.parse(listed.stdout))) {
    const args = TOOL_ARGUMENTS[tool] ?? {}
    const call = await syncscope(['call', SERVER, tool, '--args', JSON.stringify(args), '--accept-defaults'])
    if (call.code !== 0) return 1
  }
  return 0
}

main()
  .catch((error: unknown) => {
    process.stderr.write(`conformance client: ${(error as Error).stack}\n`)
    return 1
  })
  .then((code) => {
    if (existsSync(join(dir, 'browser.log'))) process.stderr.write(readFileSync(join(dir, 'browser.log'), 'utf8'))
    rmSync(dir, { recursive: true, force: true })
    process.exit(code)
  })
