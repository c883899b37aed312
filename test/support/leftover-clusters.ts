import { existsSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import { afterAll, beforeAll, expect } from 'vitest'
import { isRoot } from '../../src/main/db/run-as'
import { useTestClustersRoot } from './clusters-root'

/**
 * A setup file of every vitest config: as root, embedded clusters live outside the tests' temporary folders, in the
 * tests' clusters folder (clusters-root.ts; about 40 MB each), and a test that deletes its data folder without
 * `removeDataDir` / `removeCluster` leaves its cluster there until the next start prunes it. Each test file fails when
 * a cluster its own Postgres ran in is still there after it. Clusters are told apart by process: other files (and
 * other checkouts on the machine) run their Postgres at the same time, so only postmasters descending from this worker
 * count.
 */
const CLUSTERS = useTestClustersRoot()
const SAMPLE_MS = 250

const field = async (pid: string, index: number): Promise<string | null> => {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null)
  // pid (comm) state ppid …: comm may hold spaces, so the fields are counted after its closing parenthesis
  return stat === null ? null : (stat.slice(stat.lastIndexOf(')') + 2).split(' ')[index] ?? null)
}

async function descendsFromUs(pid: string): Promise<boolean> {
  const us = String(process.pid)
  for (let current: string | null = pid, hops = 0; current && current !== '0' && current !== '1' && hops < 16; hops++) {
    if (current === us) return true
    current = await field(current, 1)
  }
  return false
}

/** The cluster folders of the postmasters this worker started (directly or through runuser), running now. */
async function ourRunningClusters(): Promise<string[]> {
  const found: string[] = []
  for (const pid of await readdir('/proc').catch(() => [])) {
    if (!/^\d+$/.test(pid)) continue
    const args = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0')
    const dir = args[args.indexOf('-D') + 1]
    if (args.indexOf('-D') < 0 || !dir?.startsWith(`${CLUSTERS}/`)) continue
    if (await descendsFromUs(pid)) found.push(dir)
  }
  return found
}

if (isRoot() && process.platform === 'linux') {
  const seen = new Set<string>()
  let timer: NodeJS.Timeout | null = null
  let sampling: Promise<void> = Promise.resolve()
  const sample = () =>
    (sampling = sampling.then(async () => (await ourRunningClusters()).forEach((dir) => seen.add(dir))))

  beforeAll(() => {
    timer = setInterval(() => void sample(), SAMPLE_MS)
    timer.unref()
  })
  afterAll(async () => {
    if (timer) clearInterval(timer)
    await sample()
    const left = [...seen].filter((dir) => existsSync(dir))
    expect(
      left,
      'embedded clusters this test file ran Postgres in and left behind (remove them with removeDataDir / removeCluster)'
    ).toEqual([])
  })
}
