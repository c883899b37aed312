import { spawn, type ChildProcess } from 'node:child_process'
import { readdir, readFile, readlink, realpath, unlink } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import type { PostgresBinaries } from './postgres-binaries'
import type { PostgresUser } from './run-as'

export interface PostmasterOptions {
  binaries: PostgresBinaries
  user: PostgresUser
  /** The cluster's data directory (PGDATA). */
  pgdata: string
  port: number
  /** `-c name=value` settings on top of the defaults (e.g. wal_level). */
  settings?: Record<string, string>
  onLog: (line: string) => void
}

export interface Postmaster {
  readonly pid: number
  readonly child: ChildProcess
  /** Resolves when the process has exited, whoever ended it. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

const DEFAULT_SETTINGS: Record<string, string> = {
  listen_addresses: '127.0.0.1',
  // No Unix socket: the only way in is TCP on loopback with the cluster's password.
  unix_socket_directories: '',
  wal_level: 'logical',
  max_wal_senders: '10',
  max_replication_slots: '10'
}

/** Postgres gets no environment of ours (it may hold secrets such as SYNCSCOPE_SECRET), only what it needs. */
export function postgresEnv(): NodeJS.ProcessEnv {
  return { LC_ALL: 'C', ...(process.env.TZ ? { TZ: process.env.TZ } : {}) }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** `postmaster.pid`: pid, data directory, start time, port, socket folder, listen address, shmem key, status. */
async function readLockFile(pgdata: string): Promise<{ pid: number; status: string } | null> {
  try {
    const lines = (await readFile(join(pgdata, 'postmaster.pid'), 'utf8')).split('\n')
    const pid = Number(lines[0])
    return Number.isInteger(pid) && pid > 0 ? { pid, status: (lines[7] ?? '').trim() } : null
  } catch {
    return null
  }
}

/** Alive and not a zombie (a container's PID 1 may never reap the postmaster of a killed parent). */
export async function isRunning(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0)
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
  if (process.platform !== 'linux') return true
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null)
  if (stat === null) return false
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
}

/**
 * Every live process that is a Postgres of this data directory: Postgres processes (the postmaster and each
 * backend) run with the data directory as their working folder. Linux reads /proc; elsewhere `ps` names the
 * postmaster by its `-D` argument.
 */
async function processesOf(pgdata: string): Promise<number[]> {
  const target = await realpath(pgdata).catch(() => pgdata)
  if (process.platform !== 'linux') {
    const lock = await readLockFile(pgdata)
    return lock && (await isRunning(lock.pid)) && (await commandOf(lock.pid)).includes(pgdata) ? [lock.pid] : []
  }
  const found: number[] = []
  for (const name of await readdir('/proc')) {
    const pid = Number(name)
    if (!Number.isInteger(pid) || pid === process.pid) continue
    const cwd = await readlink(`/proc/${pid}/cwd`).catch(() => null)
    if (cwd !== target) continue
    if ((await isPostgresProcess(pid)) && (await isRunning(pid))) found.push(pid)
  }
  return found
}

/** A postgres program, by its executable (Linux) or its command line. */
async function isPostgresProcess(pid: number): Promise<boolean> {
  if (process.platform === 'linux') return basename(await readlink(`/proc/${pid}/exe`).catch(() => '')) === 'postgres'
  return /\bpostgres\b/.test(await commandOf(pid))
}

/**
 * Whether a Postgres runs on this data directory: its lock file names a live postgres process, or a postgres process
 * works in it (backends a killed postmaster left behind).
 */
export async function postgresRunsOn(pgdata: string): Promise<boolean> {
  const lock = await readLockFile(pgdata)
  if (lock && (await isRunning(lock.pid)) && (await isPostgresProcess(lock.pid))) return true
  return (await processesOf(pgdata)).length > 0
}

async function commandOf(pid: number): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn('ps', ['-p', String(pid), '-o', 'command='], { stdio: ['ignore', 'pipe', 'ignore'] })
    let out = ''
    child.stdout.on('data', (chunk) => (out += chunk))
    child.once('error', () => resolve(''))
    child.once('close', () => resolve(out))
  })
}

async function waitUntilGone(pgdata: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if ((await processesOf(pgdata)).length === 0) return true
    await sleep(50)
  }
  return (await processesOf(pgdata)).length === 0
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name)
  } catch {
    // already gone
  }
}

/**
 * Ends whatever Postgres still runs on this data directory, left by an earlier run that was killed: its postmaster
 * with a fast shutdown (rolled-back transactions, a clean checkpoint); backends orphaned by a killed postmaster,
 * which would keep the new one from starting, with SIGKILL once they had time to notice and leave by themselves.
 */
export async function stopLeftovers(pgdata: string, log: (line: string) => void): Promise<void> {
  if ((await processesOf(pgdata)).length === 0) return removeStaleLock(pgdata, log)
  const lock = await readLockFile(pgdata)
  const postmaster = lock && (await processesOf(pgdata)).includes(lock.pid) ? lock.pid : null
  if (postmaster !== null) {
    log(
      `embedded Postgres: a server left running by an earlier start (pid ${postmaster}) holds ${pgdata}; stopping it (fast shutdown)`
    )
    signal(postmaster, 'SIGINT')
    if (await waitUntilGone(pgdata, 30_000)) return
    signal(postmaster, 'SIGQUIT')
  }
  if (await waitUntilGone(pgdata, 5_000)) return
  const left = await processesOf(pgdata)
  log(`embedded Postgres: ending ${left.length} leftover Postgres process(es) of ${pgdata} (pids ${left.join(', ')})`)
  for (const pid of left) signal(pid, 'SIGKILL')
  if (!(await waitUntilGone(pgdata, 5_000))) {
    throw new Error(
      `Postgres processes of ${pgdata} do not end (pids ${(await processesOf(pgdata)).join(', ')}): stop them (kill -9 <pid>) and start again`
    )
  }
}

/**
 * A lock file whose pid now belongs to another program (after a reboot) keeps Postgres from starting. It is removed
 * only where /proc shows that no process of this data directory is left, the case its shared-memory check is for.
 */
async function removeStaleLock(pgdata: string, log: (line: string) => void): Promise<void> {
  const lock = await readLockFile(pgdata)
  if (!lock || process.platform !== 'linux' || !(await isRunning(lock.pid))) return
  log(`embedded Postgres: removing the stale lock file of ${pgdata} (its pid ${lock.pid} is now another program)`)
  await unlink(join(pgdata, 'postmaster.pid')).catch(() => undefined)
}

/** Starts the postmaster and resolves once it accepts connections (its lock file says `ready`, as pg_ctl reads it). */
export async function startPostmaster(options: PostmasterOptions): Promise<Postmaster> {
  const settings = { ...DEFAULT_SETTINGS, ...options.settings }
  const args = [
    '-D',
    options.pgdata,
    '-p',
    String(options.port),
    ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`])
  ]
  // Its own process group: a Ctrl+C in the terminal reaches us, and we stop Postgres in order.
  const child = spawn(options.binaries.postgres, args, {
    ...options.user,
    cwd: dirname(options.pgdata),
    env: postgresEnv(),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const recent: string[] = []
  const onOutput = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line.trim()) continue
      recent.push(line)
      if (recent.length > 30) recent.shift()
      options.onLog(line)
    }
  }
  child.stdout?.on('data', onOutput)
  child.stderr?.on('data', onOutput)
  let spawnError: Error | null = null
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('error', (error) => {
      spawnError = error
      resolve({ code: null, signal: null })
    })
    child.once('exit', (code, signal) => resolve({ code, signal }))
  })
  let hasExited = false
  void exited.then(() => (hasExited = true))
  while (!hasExited) {
    const lock = await readLockFile(options.pgdata)
    if (lock !== null && lock.pid === child.pid && lock.status === 'ready') return { pid: lock.pid, child, exited }
    await sleep(20)
  }
  if (spawnError) throw new Error(`could not run ${options.binaries.postgres}: ${(spawnError as Error).message}`)
  const reason = recent.find((line) => /\b(FATAL|PANIC)\b/.test(line)) ?? recent.at(-1) ?? 'it exited without a message'
  throw new Error(`the embedded Postgres did not start: ${reason.replace(/^.*?\b(FATAL|PANIC):\s*/, '')}`)
}

/** Fast shutdown, then immediate, then SIGKILL: resolves once the postmaster is gone. */
export async function stopPostmaster(postmaster: Postmaster): Promise<void> {
  const done = postmaster.exited.then(() => true)
  const within = (ms: number) => Promise.race([done, sleep(ms).then(() => false)])
  signal(postmaster.pid, 'SIGINT')
  if (await within(30_000)) return
  signal(postmaster.pid, 'SIGQUIT')
  if (await within(5_000)) return
  signal(postmaster.pid, 'SIGKILL')
  await done
}
