import { spawn } from 'node:child_process'
import { join } from 'node:path'

/**
 * A bench client script (under bench/) in its own process, so its socket work does not share the server's event loop:
 * `ready` once it printed `{"ready":true}`, `lines` the JSON lines it printed, once it exited; `send` writes to its stdin.
 */
export function clientProcess(
  script: string,
  args: string[]
): { ready: Promise<void>; lines: Promise<unknown[]>; send(text: string): void } {
  const child = spawn(process.execPath, [join(__dirname, script), ...args], { stdio: ['pipe', 'pipe', 'inherit'] })
  let output = ''
  let markReady: () => void = () => undefined
  const ready = new Promise<void>((resolve) => (markReady = resolve))
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString()
    if (output.includes('"ready"')) markReady()
  })
  const lines = new Promise<unknown[]>((resolve) =>
    child.on('exit', () =>
      resolve(
        output
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as unknown)
      )
    )
  )
  return { ready, lines, send: (text) => child.stdin.write(text) }
}
