import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'

/**
 * Stdio servers run in a process group of their own (POSIX): `npx pkg` and `sh -c '…'` start the real server as a
 * grandchild, which ending only our child would leave running. Each group is ended as a whole, and on our exit too.
 */
const GROUPS = process.platform !== 'win32'
const live = new Set<number>()
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(GROUPS ? -pgid : pgid, signal)
  } catch {
    // gone already
  }
}

let exitHookInstalled = false
function track(pgid: number): void {
  live.add(pgid)
  if (exitHookInstalled) return
  exitHookInstalled = true
  // the app quits (or a CLI returns) without stopping its servers: nothing async runs now, so SIGKILL
  process.on('exit', () => {
    for (const group of live) killGroup(group, 'SIGKILL')
  })
}

/** Members of the group that are still running (zombies no longer count: an orphan's parent may never reap it). */
function groupRunning(pgid: number): boolean {
  if (process.platform !== 'linux') {
    try {
      process.kill(GROUPS ? -pgid : pgid, 0)
      return true
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM'
    }
  }
  for (const name of readdirSync('/proc')) {
    if (name.charCodeAt(0) > 57) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') return true
    } catch {
      // gone meanwhile
    }
  }
  return false
}

async function groupGone(pgid: number, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs
  while (groupRunning(pgid)) {
    if (Date.now() >= deadline) return false
    await sleep(20)
  }
  return true
}

/** Spawns `command` as the leader of a new process group (POSIX); the group is ended on our exit if still running. */
export function spawnInGroup(command: string, args: string[], options: SpawnOptions): ChildProcess {
  const child = spawn(command, args, { ...options, detached: GROUPS })
  if (child.pid) track(child.pid)
  return child
}

/**
 * Ends a group we started and waits until none of it runs: SIGTERM to every member, SIGKILL to what is left after
 * `graceMs`. The group id is the leader's pid; its members are ended even when the leader is gone already.
 */
export async function endGroup(pgid: number | null | undefined, graceMs = 1_000): Promise<void> {
  if (!pgid) return
  if (groupRunning(pgid)) {
    killGroup(pgid, 'SIGTERM')
    if (!(await groupGone(pgid, graceMs))) {
      killGroup(pgid, 'SIGKILL')
      await groupGone(pgid, 5_000)
    }
  }
  live.delete(pgid)
}
