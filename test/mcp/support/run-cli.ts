import { spawn } from 'node:child_process'
import { join, resolve } from 'node:path'

const ROOT = resolve(__dirname, '../../..')

export interface CliRun {
  code: number | null
  stdout: string
  stderr: string
  ms: number
}

/** Runs `syncscope mcp …` as a person would; no keychain on this bus, so secrets go to the data folder's 0600 file. */
export function runMcpCli(args: string[]): Promise<CliRun> {
  const started = Date.now()
  return new Promise((done) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin/syncscope.js'), 'mcp', ...args], {
      env: { ...process.env, DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent/syncscope-test-bus' },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.once('close', (code) => done({ code, stdout, stderr, ms: Date.now() - started }))
  })
}
