import { spawn } from 'node:child_process'
import { closeSync, openSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findFreePort } from '../../src/main/net/free-port'
import { har } from '../doctor/har-builder'

const ROOT = resolve(__dirname, '../..')
const BULK_SERVER = resolve(__dirname, 'support/bulk-mcp-server.mjs')
const MB = 1024 * 1024

interface Printed {
  code: number | null
  stdout: Buffer
  stderr: Buffer
}

let dir: string

const env = () => ({ ...process.env, DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent/syncscope-pipe-test-bus' })

/** `syncscope …` with stdout and stderr redirected into files, as `> out 2> err` does. */
async function intoFiles(args: string[], name: string): Promise<Printed> {
  const [out, err] = [join(dir, `${name}.out`), join(dir, `${name}.err`)]
  const fds = [openSync(out, 'w'), openSync(err, 'w')]
  try {
    const child = spawn(process.execPath, [join(ROOT, 'bin/syncscope.js'), ...args], {
      cwd: dir,
      env: env(),
      stdio: ['ignore', fds[0], fds[1]]
    })
    const code = await new Promise<number | null>((done) => child.once('exit', done))
    return { code, stdout: await readFile(out), stderr: await readFile(err) }
  } finally {
    for (const fd of fds) closeSync(fd)
  }
}

/** `syncscope … | reader`: stdout and stderr are pipes, read by this process until they close. */
async function throughPipes(args: string[]): Promise<Printed> {
  const child = spawn(process.execPath, [join(ROOT, 'bin/syncscope.js'), ...args], {
    cwd: dir,
    env: env(),
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const stdout: Buffer[] = []
  const stderr: Buffer[] = []
  child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk))
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk))
  const code = await new Promise<number | null>((done) => child.once('close', done))
  return { code, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr) }
}

/** A 3,000-request HAR of a sync failing with 500s: the doctor's report on it runs to megabytes. */
function bigHar(): string {
  const entries = Array.from({ length: 3_000 }, (_, i) => ({
    at: i * 10,
    params: { offset: `${i}_0`, handle: 'h-1' },
    status: 500,
    body: { message: `failure ${i}` }
  }))
  return har(...entries)
}

/** Each command that can print a large report, with what makes it large; `json`: its stdout must parse as JSON. */
interface Command {
  name: string
  args: () => string[]
  json: boolean
  minStdout: number
  minStderr?: number
  /** The report holds timings, a start time and random cache busters, which differ from run to run. */
  timed?: boolean
}

/** What is compared between two runs: the bytes, or for a timed report the text with those parts made alike. */
const comparable = (command: Command, bytes: Buffer): string | number =>
  command.timed
    ? bytes
        .toString()
        .replaceAll(/syncscope-check-[a-z0-9]+/g, 'syncscope-check-x')
        .replaceAll(/\d+/g, '0')
    : bytes.length

const COMMANDS: Command[] = [
  { name: 'doctor --json', args: () => ['doctor', '--json', 'big.har'], json: true, minStdout: 2 * MB },
  { name: 'doctor', args: () => ['doctor', 'big.har'], json: false, minStdout: 128 * 1024 },
  {
    // every failed check shows its request (with these 100 KB headers) as evidence
    name: 'check --json',
    args: () => ['check', checkUrl, '--json', ...bigHeaders()],
    json: true,
    minStdout: 2 * MB,
    timed: true
  },
  { name: 'check', args: () => ['check', checkUrl, ...bigHeaders()], json: false, minStdout: 2 * MB, timed: true },
  {
    name: 'mcp list --json',
    args: () => ['mcp', 'list', '--json', '--config', 'broken.json', '--data-dir', 'data'],
    json: true,
    minStdout: 2 * MB,
    // the invalid entries are named on stderr too
    minStderr: 70_000
  },
  {
    name: 'mcp tools --json',
    args: () => ['mcp', 'tools', 'bulk', '--json', '--config', 'bulk.json', '--data-dir', 'data'],
    json: true,
    minStdout: 2 * MB
  },
  {
    name: 'mcp call --json',
    args: () => ['mcp', 'call', 'bulk', 'bulk', '--args', '{"bytes":3000000}', '--json', '--config', 'bulk.json'],
    json: true,
    minStdout: 2 * MB
  }
]

let checkUrl: string
const bigHeaders = () => ['a', 'b', 'c', 'd'].flatMap((name) => ['--header', `x-pad-${name}: ${'p'.repeat(100_000)}`])

describe('every CLI report is complete through a pipe', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'syncscope-pipe-'))
    // a closed port: every check that asks fails with the request (and its headers) as evidence
    checkUrl = `http://127.0.0.1:${await findFreePort()}/v1/shape`
    const broken = Object.fromEntries(
      Array.from({ length: 6_000 }, (_, i) => [`broken-${String(i).padStart(5, '0')}`, { command: '' }])
    )
    await Promise.all([
      writeFile(join(dir, 'big.har'), bigHar()),
      writeFile(join(dir, 'broken.json'), JSON.stringify({ mcpServers: broken })),
      writeFile(
        join(dir, 'bulk.json'),
        JSON.stringify({ mcpServers: { bulk: { command: process.execPath, args: [BULK_SERVER] } } })
      )
    ])
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it.each(COMMANDS)('$name: the same output through a pipe as into a file', async (command) => {
    const file = await intoFiles(command.args(), command.name.replaceAll(/\W+/g, '-'))
    expect(file.stdout.length).toBeGreaterThan(command.minStdout)
    expect(file.stderr.length).toBeGreaterThanOrEqual(command.minStderr ?? 0)
    const piped = await throughPipes(command.args())
    const seen = (printed: Printed) => ({
      code: printed.code,
      stdout: comparable(command, printed.stdout),
      stderr: comparable(command, printed.stderr)
    })
    expect(seen(piped)).toEqual(seen(file))
    if (command.json) expect(() => JSON.parse(piped.stdout.toString()) as unknown).not.toThrow()
  })

  it('a reader that stops early (`| head -c 100`) does not keep the process waiting for a drain', async () => {
    const file = await intoFiles(['doctor', '--json', 'big.har'], 'doctor-head')
    const child = spawn(process.execPath, [join(ROOT, 'bin/syncscope.js'), 'doctor', '--json', 'big.har'], {
      cwd: dir,
      env: env(),
      stdio: ['ignore', 'pipe', 'ignore']
    })
    child.stdout.once('data', () => child.stdout.destroy())
    expect(await new Promise((done) => child.once('exit', done))).toBe(file.code)
  })
})
