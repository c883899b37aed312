/**
 * What bench/workbench-scale.ts reads of Chromium beside the page: the memory of its processes (/proc), the page's
 * CPU profile and the JS heaps of the page and of its workers (the DevTools protocol).
 */
import { readdir, readFile } from 'node:fs/promises'
import type { Browser, Page } from 'playwright-core'

const mib = (bytes: number) => bytes / 2 ** 20
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))

/** PSS (bytes) of a process and all its descendants: shared pages counted once across them. */
export async function treePss(root: number): Promise<{ total: number; byType: Record<string, number> }> {
  const parents = new Map<number, number>()
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '')
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    parents.set(Number(name), ppid)
  }
  const inTree = (pid: number): boolean => {
    for (let at: number | undefined = pid; at !== undefined && at > 1; at = parents.get(at))
      if (at === root) return true
    return false
  }
  const byType: Record<string, number> = {}
  let total = 0
  for (const pid of parents.keys()) {
    if (!inTree(pid)) continue
    const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '')
    const pss = Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0) * 1024
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')
    const type = /--type=([\w-]+)/.exec(cmdline)?.[1] ?? 'browser'
    byType[type] = (byType[type] ?? 0) + pss
    total += pss
  }
  return { total, byType }
}

/** Starts the page's CPU profiler; the function returned stops it and prints where the main thread spent its time. */
export async function startProfile(page: Page, phase: string): Promise<() => Promise<void>> {
  const cdp = await page.context().newCDPSession(page)
  await cdp.send('Profiler.enable')
  await cdp.send('Profiler.setSamplingInterval', { interval: 200 })
  await cdp.send('Profiler.start')
  return async () => {
    const { profile } = await cdp.send('Profiler.stop')
    const interval = (profile.endTime - profile.startTime) / Math.max(1, profile.samples?.length ?? 1) / 1000
    const self = new Map<string, number>()
    const byId = new Map(profile.nodes.map((node) => [node.id, node]))
    for (const sample of profile.samples ?? []) {
      const frame = byId.get(sample)?.callFrame
      const name = `${frame?.functionName || '(anonymous)'} ${frame?.url.split('/').pop()}:${frame?.lineNumber}`
      self.set(name, (self.get(name) ?? 0) + interval)
    }
    const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, 25)
    console.log(
      `main thread while ${phase} (self time, ms):\n${top.map(([name, ms]) => `${ms.toFixed(0).padStart(7)}  ${name}`).join('\n')}`
    )
  }
}

/** `--profile`: the JS heaps of the page and of the workbench's worker, before and after a forced collection. */
export async function heapReport(browser: Browser, page: Page, pss: () => Promise<number>): Promise<void> {
  const cdp = await browser.newBrowserCDPSession()
  const { targetInfos } = await cdp.send('Target.getTargets')
  const worker = targetInfos.find((target) => target.type === 'worker')
  const pageCdp = await page.context().newCDPSession(page)
  const pageHeap = await pageCdp.send('Runtime.getHeapUsage')
  console.log(`page heap: used ${mib(pageHeap.usedSize).toFixed(0)} MiB of ${mib(pageHeap.totalSize).toFixed(0)} MiB`)
  if (!worker) return console.log('no worker target found')
  const { sessionId } = await cdp.send('Target.attachToTarget', { targetId: worker.targetId, flatten: false })
  let next = 1
  const ask = (method: string, params: object = {}) =>
    new Promise<unknown>((done) => {
      const id = next++
      const listener = (event: { sessionId: string; message: string }) => {
        const message = JSON.parse(event.message) as { id?: number; result?: unknown }
        if (event.sessionId === sessionId && message.id === id) {
          cdp.off('Target.receivedMessageFromTarget', listener)
          done(message.result)
        }
      }
      cdp.on('Target.receivedMessageFromTarget', listener)
      void cdp.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id, method, params }) })
    })
  const heap = (await ask('Runtime.getHeapUsage')) as { usedSize: number; totalSize: number }
  console.log(`worker heap: used ${mib(heap.usedSize).toFixed(0)} MiB of ${mib(heap.totalSize).toFixed(0)} MiB`)
  console.log(`Chromium PSS before a collection in the worker: ${mib(await pss()).toFixed(0)} MiB`)
  await ask('HeapProfiler.collectGarbage')
  await sleep(2_000)
  console.log(`Chromium PSS after it: ${mib(await pss()).toFixed(0)} MiB`)
  const collected = (await ask('Runtime.getHeapUsage')) as { usedSize: number; totalSize: number }
  console.log(
    `worker heap after a collection: used ${mib(collected.usedSize).toFixed(0)} MiB of ${mib(collected.totalSize).toFixed(0)} MiB`
  )
}
