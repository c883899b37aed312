import { spawn, type ChildProcess } from 'node:child_process'
import { resolve } from 'node:path'
import { endServe } from './postgres'

const BIN = resolve(__dirname, '../../bin/syncscope.js')

export interface CliRun {
  child: ChildProcess
  /** Its exit code once it exits (null when a signal ended it). */
  exited: Promise<number | null>
  output(): { stdout: string; stderr: string }
}

/** Every CLI these helpers started: `endCliRuns` (an afterAll) ends those still running, even after a failed test. */
const started: ChildProcess[] = []

/** The built `syncscope` CLI (bin/syncscope.js) as a child process, its output collected. */
export function runCli(args: string[], env: NodeJS.ProcessEnv = process.env): CliRun {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env })
  started.push(child)
  let stdout = ''
  let stderr = ''
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)))
  return { child, exited, output: () => ({ stdout, stderr }) }
}

export async function endCliRuns(): Promise<void> {
  await Promise.all(started.splice(0).map(endServe))
}

export async function waitFor(predicate: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((done) => setTimeout(done, 100))
  }
}

/** Starts `syncscope serve` and waits for its banner; the shape API's URL from it. An early exit says why. */
export async function startServe(
  args: string[],
  env: NodeJS.ProcessEnv = process.env
): Promise<CliRun & { shapeUrl: string }> {
  const run = runCli(['serve', ...args], env)
  let exitCode: number | null | undefined
  void run.exited.then((code) => (exitCode = code))
  await waitFor(
    () => run.output().stdout.includes('Press Ctrl+C to stop.') || exitCode !== undefined,
    'the banner of syncscope serve'
  )
  if (exitCode !== undefined)
    throw new Error(`syncscope serve exited with ${exitCode}:\n${run.output().stdout}${run.output().stderr}`)
  const shapeUrl = /Shape API\s+(\S+)/.exec(run.output().stdout)?.[1] as string
  return { ...run, shapeUrl }
}
