import { resolve } from 'node:path'
import { existsSync } from 'node:fs'
import { startApp } from './app'
import { parseServeOptions, SERVE_USAGE } from './cli/serve-options'
import type { ServeOptions } from './settings/serve-options'
import { UsageError } from './cli/output'
import { referenceBanner, referenceNotes } from './cli/reference-env'
import { mcpMain } from './cli/mcp'
import { checkMain } from './cli/check'
import { clustersMain } from './cli/clusters'
import { doctorMain, tapMain } from './cli/doctor'
import { shapeMain } from './cli/shape'
import { verifyMain } from './cli/verify'
import { txidMain } from './cli/txid'
import { bundleMain } from './cli/bundle'
import { exitWhenDrained } from './cli/output'

const USAGE = `Syncscope — local shape server, authorising proxy and MCP server registry

usage:
  ${SERVE_USAGE.split('\n').join('\n  ')}
  syncscope mcp <list|tools|call|login> …   see \`syncscope mcp --help\`
  syncscope check <url> [options]           protocol conformance of a shape endpoint; see \`syncscope check --help\`
  syncscope doctor <file.har|recording>     diagnose a recorded sync; see \`syncscope doctor --help\`
  syncscope tap --upstream URL [--port N]   a recording proxy for the doctor; see \`syncscope tap --help\`
  syncscope clusters <list|prune|remove>    the embedded clusters root keeps; see \`syncscope clusters --help\`
  syncscope shape <at|diff|log> <shape-url> a shape's rows at any offset of its log; see \`syncscope shape --help\`
  syncscope verify <recording> --database U a client's rows against Postgres; see \`syncscope verify --help\`
  syncscope txid <n> --shape <shape-url>    where a write's transaction went; see \`syncscope txid --help\`
  syncscope bundle <export|open> …          repro bundles for bug reports; see \`syncscope bundle --help\``

function rendererDir(): string {
  // this module runs as out/main/cli.js, beside the built renderer
  const dir = resolve(__dirname, '../renderer')
  if (!existsSync(resolve(dir, 'index.html'))) {
    throw new Error(`the UI is not built (${dir} is missing): run \`npm run build\` first`)
  }
  return dir
}

/**
 * The first SIGINT or SIGTERM from now on, also one that comes while the server starts (it then stops once started:
 * the embedded Postgres runs in a process group of its own, and a signal's default would end this process and leave
 * it running). Later signals are ignored, so a repeated one (a second Ctrl+C, `timeout`, a supervisor) cannot cut
 * the shutdown short.
 */
function firstStopSignal(onSignal: (signal: string) => void): { next: Promise<string>; received(): boolean } {
  let received = false
  process.removeAllListeners('SIGINT')
  process.removeAllListeners('SIGTERM')
  const next = new Promise<string>((resolve) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const)
      process.on(signal, () => {
        if (received) return
        received = true
        onSignal(signal)
        resolve(signal)
      })
  })
  return { next, received: () => received }
}

async function serve(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`usage:\n  ${SERVE_USAGE}\n`)
    return 0
  }
  let options: ServeOptions
  try {
    options = parseServeOptions(argv)
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    process.stderr.write(`syncscope: ${error.message}\n`)
    return 2
  }
  const log = (line: string) => process.stderr.write(`${line}\n`)
  const stop = firstStopSignal((signal) => process.stdout.write(`${signal}: stopping…\n`))
  for (const note of referenceNotes(process.env, options.database)) log(note)
  const app = await startApp({ serve: options, rendererDir: options.ui ? rendererDir() : null, log })
  const reference = referenceBanner(process.env, options)
  if (!stop.received())
    process.stdout.write(
      `${[...app.describe(), ...(reference ? [reference] : [])].join('\n')}\nData folder   ${options.dataDir}\nPress Ctrl+C to stop.\n`
    )
  await stop.next
  await app.close().catch((error: unknown) => log(`shutdown: ${describeFailure(error)}`))
  return 0
}

export async function main(argv: string[]): Promise<number> {
  // What any command writes into the data folder (settings.json, secrets, shape logs) is for this user only.
  process.umask(0o077)
  const [command, ...rest] = argv
  if (command === 'serve') return serve(rest)
  if (command === 'mcp') return mcpMain(rest)
  if (command === 'check') return checkMain(rest)
  if (command === 'doctor') return doctorMain(rest)
  if (command === 'tap') return tapMain(rest)
  if (command === 'clusters') return clustersMain(rest)
  if (command === 'shape') return shapeMain(rest)
  if (command === 'verify') return verifyMain(rest)
  if (command === 'txid') return txidMain(rest)
  if (command === 'bundle') return bundleMain(rest)
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(`${USAGE}\n`)
    return command === undefined ? 1 : 0
  }
  process.stderr.write(`unknown command '${command}'\n\n${USAGE}\n`)
  return 2
}

/** One line for any failure, with the fix where we know it: never `undefined`, never a stack trace. */
function describeFailure(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return describeFailure(error.errors[0])
  if (!(error instanceof Error))
    return error === undefined || error === null ? 'failed without saying why' : String(error).split('\n')[0]!
  const { code, port, address } = error as NodeJS.ErrnoException & { port?: number; address?: string }
  if (code === 'EADDRINUSE' && port !== undefined)
    return `port ${port} on ${address} is in use: stop what uses it, or pick another with --port / --proxy-port (0 picks a free one)`
  if (code === 'EACCES' && port !== undefined)
    return `not allowed to listen on port ${port}: pick a port above 1023 with --port`
  const line = error.message
    .split('\n')
    .find((text) => text.trim() !== '')
    ?.trim()
  return line ?? code ?? error.name
}

function fail(error: unknown): void {
  process.stderr.write(`syncscope: ${describeFailure(error)}\n`)
  if (process.env.SYNCSCOPE_DEBUG && error instanceof Error) process.stderr.write(`${error.stack}\n`)
  void exitWhenDrained(1)
}

process.on('uncaughtException', fail)
process.on('unhandledRejection', fail)
main(process.argv.slice(2)).then(exitWhenDrained, fail)
