import { readdirSync, readlinkSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { describeWith } from '../support/facility-tests'
import { LogDescriptors, descriptorBudget, openFilesLimit } from '../../src/main/shapes/storage/log-descriptors'
import { type LogRange, ShapeLog } from '../../src/main/shapes/storage/shape-log'

/** Files under `dir` this process holds open, as /proc/self/fd shows them. */
function openFilesUnder(dir: string): string[] {
  const targets: string[] = []
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`)
      if (target.startsWith(dir)) targets.push(target)
    } catch {
      // the descriptor of the readdir itself is gone by now
    }
  }
  return targets.sort()
}

const entry = (tx: bigint, op = 0) => ({ offset: { tx, op }, line: JSON.stringify({ tx: String(tx), op }) })

describeWith(['linux'], 'descriptors of shape logs', () => {
  let dir = ''
  afterEach(async () => dir && rm(dir, { recursive: true, force: true }))

  async function logs(count: number, descriptors: LogDescriptors): Promise<ShapeLog[]> {
    dir = await mkdtemp(join(tmpdir(), 'syncscope-fds-'))
    return Promise.all(
      Array.from({ length: count }, async (_, index) => {
        const shapeDir = await mkdtemp(join(dir, `shape-${index}-`))
        return ShapeLog.create(shapeDir, 1_000_000, descriptors)
      })
    )
  }

  it('keeps the files of a busy log open between appends, and no more files than the budget', async () => {
    const descriptors = new LogDescriptors(4)
    const [first, second, third] = (await logs(3, descriptors)) as [ShapeLog, ShapeLog, ShapeLog]
    first.append([entry(10n)])
    expect(openFilesUnder(dir)).toHaveLength(2)
    first.append([entry(20n)])
    expect(openFilesUnder(dir)).toHaveLength(2)
    second.append([entry(10n)])
    third.append([entry(10n)])
    expect(openFilesUnder(dir)).toHaveLength(4)
    expect(openFilesUnder(dir).some((path) => path.startsWith(join(first.logPath, '..')))).toBe(false)
  })

  it('writes correctly through files reopened after they were closed for others', async () => {
    const descriptors = new LogDescriptors(2)
    const all = await logs(5, descriptors)
    for (let tx = 1n; tx <= 20n; tx++) for (const log of all) log.append([entry(tx * 10n), entry(tx * 10n, 1)])
    for (const log of all) {
      const lines = (await log.readAfter({ tx: 0n, op: 0 }))?.lines.toString().split('\n')
      expect(lines).toHaveLength(40)
      expect(JSON.parse(lines?.at(-1) ?? '')).toEqual({ tx: '200', op: 1 })
      const range = log.rangeAfter({ tx: 0n, op: 0 }) as LogRange
      expect(() => log.checkRange(range, Buffer.from(lines?.join('\n') ?? ''))).not.toThrow()
    }
    expect(openFilesUnder(dir)).toHaveLength(2)
  })

  it('closes a dropped log’s files at once', async () => {
    const descriptors = new LogDescriptors(8)
    const [dropped, kept] = (await logs(2, descriptors)) as [ShapeLog, ShapeLog]
    dropped.append([entry(10n)])
    kept.append([entry(10n)])
    dropped.close()
    expect(openFilesUnder(dir).every((path) => !path.startsWith(join(dropped.logPath, '..')))).toBe(true)
    expect(openFilesUnder(dir)).toHaveLength(2)
  })

  it('takes a quarter of the open-files limit, within bounds', () => {
    expect(openFilesLimit('Max open files            20000                20000                files')).toBe(20_000)
    expect(openFilesLimit('Max open files            unlimited            unlimited            files')).toBe(
      Number.MAX_SAFE_INTEGER
    )
    expect(openFilesLimit('')).toBe(1024)
    expect(descriptorBudget(20_000)).toBe(5000)
    expect(descriptorBudget(40)).toBe(16)
    expect(descriptorBudget(Number.MAX_SAFE_INTEGER)).toBe(8192)
    expect(() => new LogDescriptors(1)).toThrow(RangeError)
  })
})
