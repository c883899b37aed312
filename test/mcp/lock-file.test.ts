import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { withLockFile } from '../../src/main/mcp/persistence/lock-file'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'syncscope-lock-'))
})
afterEach(() => rm(dir, { recursive: true, force: true }))

const holder = (pid: number) => JSON.stringify({ pid, host: hostname(), nonce: 'theirs' })

describe('lock files shared with other processes', () => {
  it('serialises holders and removes the file after each', async () => {
    const path = join(dir, 'a.lock')
    const order: string[] = []
    await Promise.all(
      ['one', 'two', 'three'].map((name) =>
        withLockFile(path, async () => {
          order.push(`${name} in`)
          expect(existsSync(path)).toBe(true)
          await new Promise((resolve) => setTimeout(resolve, 20))
          order.push(`${name} out`)
        })
      )
    )
    expect(order).toEqual(['one in', 'one out', 'two in', 'two out', 'three in', 'three out'])
    expect(existsSync(path)).toBe(false)
  })

  it('takes over a lock whose process is gone (kill -9 while holding it)', async () => {
    const path = join(dir, 'dead.lock')
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString()
    await writeFile(path, holder(Number(dead)))
    expect(await withLockFile(path, async () => 'mine', { waitMs: 2_000 })).toBe('mine')
    expect(existsSync(path)).toBe(false)
  })

  it('waits for a live holder, and gives up naming the file; a holder older than staleMs is taken over', async () => {
    const path = join(dir, 'live.lock')
    await writeFile(path, holder(process.pid))
    await expect(withLockFile(path, async () => 'never', { waitMs: 300 })).rejects.toThrow(
      `${path} is held by another Syncscope process`
    )
    expect(await withLockFile(path, async () => 'taken over', { staleMs: 200, waitMs: 5_000 })).toBe('taken over')
  })
})
