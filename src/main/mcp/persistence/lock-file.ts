import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { mkdir, open, readFile, stat, unlink } from 'node:fs/promises'
import { dirname } from 'node:path'
import { z } from 'zod'

const LockSchema = z.object({ pid: z.number().int(), host: z.string(), nonce: z.string() })

export interface LockOptions {
  /** A lock older than this is taken over even when its process still runs (a hung holder). */
  staleMs?: number
  /** Give up waiting after this long. */
  waitMs?: number
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return false
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH'
  }
}

/** A lock left by a process that is gone (same machine), one older than `staleMs`, or one never completely written. */
async function isStale(path: string, staleMs: number): Promise<boolean> {
  const [text, info] = await Promise.all([readFile(path, 'utf8').catch(() => null), stat(path).catch(() => null)])
  if (!info) return false
  const age = Date.now() - info.mtimeMs
  if (age > staleMs) return true
  let holder: z.infer<typeof LockSchema>
  try {
    holder = LockSchema.parse(JSON.parse(text ?? ''))
  } catch {
    // written in two steps (create, then content): an empty file is a holder between them, or one that died there
    return age > 2_000
  }
  return holder.host === hostname() && processGone(holder.pid)
}

/** In this process, one holder per path at a time (the file lock would only make the others poll). */
const local = new Map<string, Promise<unknown>>()

/**
 * Runs `work` holding `path` as a lock file shared with other processes: created with O_EXCL, holding our pid, removed
 * after. A lock whose process is gone, or older than `staleMs`, is taken over.
 */
export function withLockFile<T>(path: string, work: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  const previous = local.get(path) ?? Promise.resolve()
  const run = previous.then(
    () => holdFile(path, work, options),
    () => holdFile(path, work, options)
  )
  local.set(
    path,
    run.catch(() => {})
  )
  return run
}

async function holdFile<T>(
  path: string,
  work: () => Promise<T>,
  { staleMs = 60_000, waitMs = 90_000 }: LockOptions
): Promise<T> {
  const nonce = randomBytes(12).toString('hex')
  const deadline = Date.now() + waitMs
  await mkdir(dirname(path), { recursive: true, mode: 0o700 })
  for (;;) {
    try {
      const handle = await open(path, 'wx', 0o600)
      try {
        await handle.writeFile(JSON.stringify({ pid: process.pid, host: hostname(), nonce }))
      } finally {
        await handle.close()
      }
      break
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    if (await isStale(path, staleMs)) {
      await unlink(path).catch(() => {})
      continue
    }
    if (Date.now() > deadline)
      throw new Error(
        `${path} is held by another Syncscope process for more than ${Math.round(waitMs / 1000)} s; if none runs, delete the file`
      )
    await sleep(20 + Math.random() * 30)
  }
  try {
    return await work()
  } finally {
    const text = await readFile(path, 'utf8').catch(() => '')
    if (text.includes(nonce)) await unlink(path).catch(() => {})
  }
}
