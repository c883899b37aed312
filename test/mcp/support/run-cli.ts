import { spawn } from 'node:child_process'
import { join, resolve } from 'node:path'

const ROOT = resolve(__dirname, '../../..')

export interface CliRun {
  code: number | null
  stdout: string
  stderr: string
  ms: number
}

export interface RunningCli {
  stdout(): string
  stderr(): string
  exited: Promise<CliRun>
  /** Ends it (SIGTERM), for one that would otherwise wait. */
  stop(): void
}

export interface CliOptions {
  /** The folder it runs in (the default workspace). */
  cwd?: string
  /** Over ours; by default no keychain on the bus, so secrets go to the data folder's 0600 file. */
  env?: NodeJS.ProcessEnv
}

/**
 * Starts `syncscope mcp …` as a person would; no keychain on this bus, so secrets go to the data folder's 0600 file.
 * The login shell is `/bin/sh`: what this machine's own rc files do (and how long they take) is not under test here.
 */
export function startMcpCli(args: string[], options: CliOptions = {}): RunningCli {
  const started = Date.now()
  const child = spawn(process.execPath, [join(ROOT, 'bin/syncscope.js'), 'mcp', ...args], {
    env: {
      ...process.env,
      SHELL: '/bin/sh',
      DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent/syncscope-test-bus',
      ...options.env
    },
    ...(options.cwd ? { cwd: options.cwd } : {}),
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = new Promise<CliRun>((done) =>
    child.once('close', (code) => done({ code, stdout, stderr, ms: Date.now() - started }))
  )
  return { stdout: () => stdout, stderr: () => stderr, exited, stop: () => void child.kill('SIGTERM') }
}

/** Runs `syncscope mcp …` to its end. */
export function runMcpCli(args: string[], options: CliOptions = {}): Promise<CliRun> {
  return startMcpCli(args, options).exited
}
