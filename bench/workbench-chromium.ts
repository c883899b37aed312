/**
 * What bench/workbench-scale.ts reads of Chromium beside the page: the memory of its processes (/proc), the page's
 * CPU profile and the JS heaps of the page and of its workers (the DevTools protocol).
 */
import { readdir, readFile } from 'node:fs/promises'
import type { Browser } from 'playwright-core'
import type { BenchPage, TargetSession } from './workbench-page'

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

interface CpuProfile {
  startTime: number
  endTime: number
  samples?: number[]
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>
}

/** Starts a target's CPU profiler (the page's, the worker's); the function returned stops it and prints where the time went. */
export async function startProfile(target: TargetSession, phase: string): Promise<() => Promise<void>> {
  await target.send('Profiler.enable')
  await target.send('Profiler.setSamplingInterval', { interval: 200 })
  await target.send('Profiler.start')
  return async () => {
    const { profile } = await target.send<{ profile: CpuProfile }>('Profiler.stop')
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
      `${phase} (self time, ms):\n${top.map(([name, ms]) => `${ms.toFixed(0).padStart(7)}  ${name}`).join('\n')}`
    )
  }
}

type HeapUsage = { usedSize: number; totalSize: number; backingStorageSize?: number }
const describeHeap = (heap: HeapUsage) =>
  `used ${mib(heap.usedSize).toFixed(0)} MiB of ${mib(heap.totalSize).toFixed(0)} MiB, ArrayBuffers ${mib(heap.backingStorageSize ?? 0).toFixed(0)} MiB`

/** `--profile`: the JS heaps of the page and of the workbench's worker, before and after a forced collection. */
export async function heapReport(page: BenchPage, pss: () => Promise<number>): Promise<void> {
  console.log(`page heap: ${describeHeap(await page.session.send<HeapUsage>('Runtime.getHeapUsage'))}`)
  const worker = await page.session.worker()
  const heap = await worker.send<HeapUsage>('Runtime.getHeapUsage')
  console.log(`worker heap: ${describeHeap(heap)}`)
  console.log(`Chromium PSS before a collection in the worker: ${mib(await pss()).toFixed(0)} MiB`)
  await worker.send('HeapProfiler.collectGarbage')
  await sleep(2_000)
  console.log(`Chromium PSS after it: ${mib(await pss()).toFixed(0)} MiB`)
  const collected = await worker.send<HeapUsage>('Runtime.getHeapUsage')
  console.log(`worker heap after a collection: ${describeHeap(collected)}`)
}

/**
 * `--profile`: Chromium's own account of its memory (a memory-infra dump over the DevTools protocol): per process,
 * each allocator (V8 heaps of the page and the worker, PartitionAlloc's partitions, malloc, shared memory…) at 4 MiB
 * or more, three levels deep.
 */
export async function allocatorReport(browser: Browser, label: string): Promise<void> {
  const cdp = await browser.newBrowserCDPSession()
  const events: Array<Record<string, unknown>> = []
  cdp.on('Tracing.dataCollected', (payload) => events.push(...(payload.value as Array<Record<string, unknown>>)))
  const complete = new Promise<void>((done) => cdp.once('Tracing.tracingComplete', () => done()))
  await cdp.send('Tracing.start', {
    transferMode: 'ReportEvents',
    // no periodic dumps, only the one asked for (the protocol's type says strings; Chromium takes the trigger list)
    traceConfig: {
      includedCategories: ['disabled-by-default-memory-infra'],
      memoryDumpConfig: { triggers: [] } as unknown as Record<string, string>
    }
  })
  await cdp.send('Tracing.requestMemoryDump', { deterministic: false, levelOfDetail: 'detailed' })
  await cdp.send('Tracing.end')
  await complete
  await cdp.detach()
  const names = new Map<unknown, string>()
  for (const event of events)
    if (event.ph === 'M' && event.name === 'process_name')
      names.set(event.pid, String((event.args as { name?: string }).name))
  console.log(`memory-infra dump, ${label}:`)
  for (const event of events) {
    if (event.ph !== 'v') continue
    const dumps = (
      event.args as { dumps?: { allocators?: Record<string, { attrs?: Record<string, { value: string }> }> } }
    ).dumps
    const lines: string[] = []
    for (const [path, node] of Object.entries(dumps?.allocators ?? {})) {
      const size = node.attrs?.size ? parseInt(node.attrs.size.value, 16) : 0
      if (path.split('/').length <= 3 && size >= 4 * 2 ** 20 && !/^(shared_memory|global)\/./.test(path))
        lines.push(`  ${mib(size).toFixed(0).padStart(6)}  ${path}`)
    }
    if (lines.length > 0)
      console.log(` ${names.get(event.pid) ?? `pid ${String(event.pid)}`}:\n${lines.sort().join('\n')}`)
  }
}
