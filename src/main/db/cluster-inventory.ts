import { lstat, readdir, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { ClusterInfo, ClusterList } from '../../shared/contract/db'
import { clustersRoot, linkedRecordNames, nearestDevice, readBackReference, recordVerdict } from './cluster-pairing'
import { isRunning, postgresRunsOn } from './postmaster'
import { isRoot } from './run-as'

/**
 * The clusters root keeps apart from their data folders (cluster.ts): which are still named by a data folder, which
 * are orphaned (their data folder is gone or names another cluster), and removing the orphans whose Postgres is not
 * running. A cluster whose data folder cannot be known — made before back-references, a damaged back-reference, a data
 * folder on a file system that is not mounted — is never removed by `prune`, only by name (`remove`).
 */

/** What `initdb` is building, what `prune` is deleting: `.<id>.initdb-<pid>[.pwfile]`, `.<id>.pruning-<pid>`. */
const IN_PROGRESS = /^\.[^/]+\.(?:initdb|pruning)-(\d+)(?:\.pwfile)?$/
/** Left half-made only past this age too: a pid of another pid namespace (a container sharing the folder) looks dead. */
const LEFTOVER_AGE_MS = 10 * 60_000

interface Verdict {
  dataFolder: string | null
  orphaned: boolean
  inUse: boolean
  reason: string
}

type Inspection = Omit<ClusterInfo, 'sizeBytes' | 'current'>

const orphan = (dataFolder: string, reason: string): Verdict => ({ dataFolder, orphaned: true, inUse: false, reason })
const kept = (dataFolder: string | null, reason: string): Verdict => ({
  dataFolder,
  orphaned: false,
  inUse: false,
  reason
})
const inUse = (dataFolder: string, reason = `in use by ${dataFolder}`): Verdict => ({
  dataFolder,
  orphaned: false,
  inUse: true,
  reason
})

async function verdictOf(path: string): Promise<Verdict> {
  const reference = await readBackReference(path)
  if (reference.kind === 'missing')
    return kept(
      null,
      'made before clusters named their data folder: which one uses it is unknown until it starts again'
    )
  if (reference.kind === 'damaged')
    return kept(null, `its back-reference is damaged (${reference.problem}): its data folder's next start rewrites it`)
  const { dataDir, id, device } = reference.value
  const verdict = await recordVerdict(dataDir, path, id)
  if (verdict.kind === 'names') return inUse(dataDir)
  if (await linkedRecordNames(path, id))
    return inUse(
      dataDir,
      `its data folder moved away from ${dataDir} (its record still exists): its next start records where`
    )
  switch (verdict.kind) {
    case 'gone':
      return (await nearestDevice(dataDir)) === device
        ? orphan(dataDir, `its data folder ${dataDir} was deleted`)
        : kept(dataDir, `its data folder ${dataDir} is missing, and the file system it was on is not mounted`)
    case 'no-record':
      return orphan(dataDir, `${dataDir} no longer holds a record of it`)
    case 'other':
      return orphan(dataDir, `${dataDir} now names another cluster (${verdict.pgdata})`)
    case 'unreadable':
      return kept(dataDir, `the record in ${dataDir} cannot be read (${verdict.problem})`)
  }
}

/** A folder of the root that holds a cluster (PG_VERSION), not a link. */
async function isCluster(root: string, id: string): Promise<boolean> {
  if (id.startsWith('.') || !(await lstat(join(root, id)).catch(() => null))?.isDirectory()) return false
  return (await lstat(join(root, id, 'PG_VERSION')).catch(() => null))?.isFile() ?? false
}

async function inspect(root: string, id: string, verdict?: Verdict): Promise<Inspection | null> {
  if (!(await isCluster(root, id))) return null
  const path = join(root, id)
  const [running, known, opts] = await Promise.all([
    postgresRunsOn(path),
    verdict ?? verdictOf(path),
    stat(join(path, 'postmaster.opts')).catch(() => null)
  ])
  return { id, path, running, lastStarted: opts ? opts.mtime.toISOString() : null, ...known }
}

/** A half-made folder whose process is gone (and that is old enough): null when it is not one, or not yet. */
async function isLeftover(root: string, name: string): Promise<boolean | null> {
  const pid = IN_PROGRESS.exec(name)?.[1]
  if (pid === undefined) return null
  const info = await lstat(join(root, name)).catch(() => null)
  if (!info || Date.now() - info.mtimeMs < LEFTOVER_AGE_MS) return false
  return !(await isRunning(Number(pid)))
}

/** Disk a folder takes: allocated blocks of everything in it, links not followed. */
export async function diskUsage(path: string): Promise<number> {
  let total = 0
  for (const pending = [path]; pending.length > 0;) {
    const current = pending.pop() as string
    const info = await lstat(current).catch(() => null)
    if (!info) continue
    total += info.blocks !== undefined ? info.blocks * 512 : info.size
    if (info.isDirectory())
      for (const name of await readdir(current).catch(() => [] as string[])) pending.push(join(current, name))
  }
  return total
}

async function entriesOf(root: string): Promise<string[]> {
  return (await readdir(root).catch(() => [] as string[])).sort()
}

const toInfo = async (inspection: Inspection, current: string | null): Promise<ClusterInfo> => ({
  ...inspection,
  sizeBytes: await diskUsage(inspection.path),
  current: inspection.path === current
})

/** Every cluster in `root`, with its size; `current` is the data directory of the cluster this app runs on. */
export async function listClusters(root: string, current: string | null = null): Promise<ClusterInfo[]> {
  const found: ClusterInfo[] = []
  for (const id of await entriesOf(root)) {
    const inspection = await inspect(root, id)
    if (inspection) found.push(await toInfo(inspection, current))
  }
  return found
}

/** The contract's view: as root the clusters folder and its clusters; otherwise none (each lives in its data folder). */
export async function clusterList(current: string | null): Promise<ClusterList> {
  if (!isRoot()) return { root: null, clusters: [] }
  const root = clustersRoot()
  return { root, clusters: await listClusters(root, current) }
}

/**
 * Moved aside (atomic) before it is deleted, so a crash half-way never leaves a partial cluster under its own name;
 * moved back if a Postgres started on it meanwhile. False when it was gone or came back to life.
 */
async function deleteCluster(root: string, id: string): Promise<boolean> {
  const aside = join(root, `.${id}.pruning-${process.pid}`)
  try {
    await rename(join(root, id), aside)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw error
  }
  if (await postgresRunsOn(aside)) {
    await rename(aside, join(root, id))
    return false
  }
  await rm(aside, { recursive: true, force: true })
  return true
}

export interface PruneResult {
  removed: ClusterInfo[]
  /** Folders an initdb or a prune left half-made when its process died. */
  leftovers: string[]
}

/** Removes the orphaned clusters of `root` whose Postgres is not running, and what dead processes left half-made. */
export async function pruneClusters(root: string): Promise<PruneResult> {
  const result: PruneResult = { removed: [], leftovers: [] }
  for (const name of await entriesOf(root)) {
    const leftover = await isLeftover(root, name)
    if (leftover) {
      await rm(join(root, name), { recursive: true, force: true })
      result.leftovers.push(name)
    }
    if (leftover !== null || !(await isCluster(root, name))) continue
    // whether a Postgres runs on it (a scan of /proc) only for the orphaned
    const verdict = await verdictOf(join(root, name))
    if (!verdict.orphaned) continue
    const inspection = await inspect(root, name, verdict)
    if (!inspection || inspection.running) continue
    const info = await toInfo(inspection, null)
    if (await deleteCluster(root, name)) result.removed.push(info)
  }
  return result
}

export type RemoveOutcome =
  { id: string; removed: true; sizeBytes: number } | { id: string; removed: false; why: string }

/**
 * Removes clusters a person named (`syncscope clusters remove`): also those prune keeps because their data folder
 * cannot be known, never one that is running or that a data folder still names.
 */
export async function removeClusters(root: string, ids: readonly string[]): Promise<RemoveOutcome[]> {
  const outcomes: RemoveOutcome[] = []
  for (const id of ids) {
    const inspection = /^[^/\\]+$/.test(id) && id !== '..' ? await inspect(root, id) : null
    if (!inspection) outcomes.push({ id, removed: false, why: `${root} holds no cluster ${id}` })
    else if (inspection.running)
      outcomes.push({ id, removed: false, why: 'a Postgres runs on it: stop the Syncscope that uses it first' })
    else if (inspection.inUse)
      outcomes.push({
        id,
        removed: false,
        why: `${inspection.reason}: delete that data folder first (its cluster goes with the next prune)`
      })
    else {
      const sizeBytes = await diskUsage(inspection.path)
      if (await deleteCluster(root, id)) outcomes.push({ id, removed: true, sizeBytes })
      else outcomes.push({ id, removed: false, why: 'it was removed meanwhile, or a Postgres started on it' })
    }
  }
  return outcomes
}

/** The ids of the clusters whose data folder cannot be known and that are not running (`remove --unknown`). */
export async function unknownClusters(root: string): Promise<string[]> {
  const ids: string[] = []
  for (const id of await entriesOf(root)) {
    const inspection = await inspect(root, id)
    if (inspection && inspection.dataFolder === null && !inspection.running) ids.push(id)
  }
  return ids
}
