import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { PerformanceObserver, monitorEventLoopDelay } from 'node:perf_hooks'
import { syncToEnd } from '../test/support/shape-http'
import { startTestShapeServer } from '../test/support/shape-server'
import { createTasks, unindexedWhere, updateAllTasks } from '../test/support/unindexed-workload'

async function main() {
  const server = await startTestShapeServer({ longPollTimeout: 20_000 })
  const service = server.app.rooms.shapes.service()!
  await createTasks(server.pool)
  for (let first = 0; first < 2000; first += 100) {
    await Promise.all(Array.from({ length: 100 }, (_, j) => syncToEnd(server.url, { table: 'tasks', where: unindexedWhere(first + j) })))
  }
  console.log('created')
  const session = new Session()
  session.connect()
  const gcs: number[] = []
  new PerformanceObserver((list) => { for (const entry of list.getEntries()) gcs.push(entry.duration) }).observe({ entryTypes: ['gc'] })
  for (let round = 0; round < 3; round++) {
    if (round === 2) { await session.post('Profiler.enable'); await session.post('Profiler.start') }
    gcs.length = 0
    const delay = monitorEventLoopDelay({ resolution: 1 })
    delay.enable()
    const applied = service.globalLsn
    const cpu = process.cpuUsage()
    const start = performance.now()
    await server.pool.query(updateAllTasks(round))
    while (service.globalLsn === applied) await new Promise((resolve) => setTimeout(resolve, 1))
    const used = process.cpuUsage(cpu)
    delay.disable()
    console.log('routed', performance.now() - start, (used.user + used.system) / 1000, 'max delay', delay.max / 1e6, 'p99', delay.percentile(99) / 1e6, 'gc max', Math.max(0, ...gcs), 'gc total', gcs.reduce((a, b) => a + b, 0))
    if (round === 2) { const { profile } = await session.post('Profiler.stop')
    writeFileSync(`/tmp/routing-scratch/service-${round}.cpuprofile`, JSON.stringify(profile)) }
  }
  await server.close()
}
void main()
