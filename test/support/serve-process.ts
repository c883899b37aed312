import { type ChildProcess, spawn } from 'node:child_process'
import { resolve } from 'node:path'
import { sleep } from './random-writes'

const BIN = resolve(__dirname, '../../bin/syncscope.js')
const outputs = new WeakMap<ChildProcess, () => string>()

/** What a server started by startServe printed so far (its log). */
export const serveOutput = (child: ChildProcess): string => outputs.get(child)?.() ?? ''

/** `syncscope serve` as a child process on a fixed port (so that clients find it again after a restart), ready once it prints the shape API's URL. */
export async function startServe(
  databaseUrl: string,
  dataDir: string,
  port: number,
  extraArgs: readonly string[] = []
): Promise<ChildProcess> {
  const args = ['serve', '--database', databaseUrl, '--data-dir', dataDir, '--port', String(port), ...extraArgs]
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()))
  outputs.set(child, () => output)
  const deadline = Date.now() + 60_000
  while (!output.includes('Shape API')) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`syncscope serve did not start: ${output}`)
    await sleep(50)
  }
  return child
}

/** kill -9: the process ends without a word; resolves once it has. */
export async function kill9(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((done) => child.once('exit', done))
  child.kill('SIGKILL')
  await exited
}
