import { lstat, link, readFile, realpath, stat, unlink } from 'node:fs/promises'
import { basename, dirname, isAbsolute, join, resolve } from 'node:path'
import { z } from 'zod'
import { writeAtomically } from '../fs/atomic-write'
import { replaceFileIn, readSmallFile } from './owned-files'
import { SYSTEM_HOME } from './postgres-binaries'

/**
 * As root a cluster lives apart from its data folder (see cluster.ts). The two name each other: the data folder's
 * record names the cluster's folder and id, the cluster's back-reference names the data folder, the same id and the
 * device the data folder was on. Where both are on one file system, the cluster also holds a hard link to the
 * record: while that record exists anywhere (a data folder that was moved), the link's count says so.
 */
export const RECORD_FILE = 'syncscope-cluster.json'
export const BACK_REFERENCE_FILE = 'syncscope-data-folder.json'
export const RECORD_LINK_FILE = 'syncscope-data-folder-record.json'

export const RecordSchema = z.object({ pgdata: z.string().min(1), id: z.string().min(1).optional() })
export type ClusterRecord = z.infer<typeof RecordSchema>

const BackReferenceSchema = z.object({
  dataDir: z.string().min(1),
  id: z.string().min(1),
  /** st_dev of the data folder: a missing folder whose nearest parent is on another device is unmounted, not gone. */
  device: z.number().int().nonnegative()
})
export type BackReference = z.infer<typeof BackReferenceSchema>

/** Where root keeps embedded clusters: `SYNCSCOPE_CLUSTERS_DIR` (absolute), else /var/lib/syncscope/clusters. */
export function clustersRoot(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.SYNCSCOPE_CLUSTERS_DIR
  if (!configured) return join(SYSTEM_HOME, 'clusters')
  if (!isAbsolute(configured)) throw new Error(`SYNCSCOPE_CLUSTERS_DIR must be an absolute path, not ${configured}`)
  return resolve(configured)
}

/** The id a record pairs its cluster under: its own, or for a record an older version wrote, the folder's name. */
export const recordId = (record: ClusterRecord): string => record.id ?? basename(record.pgdata)

export function parseJson<T>(text: string, schema: z.ZodType<T>): T | null {
  try {
    const parsed = schema.safeParse(JSON.parse(text))
    return parsed.success ? parsed.data : null
  } catch {
    return null
  }
}

const codeOf = (error: unknown) => (error as NodeJS.ErrnoException).code

export type Readout<T> = { kind: 'ok'; value: T } | { kind: 'missing' } | { kind: 'damaged'; problem: string }

async function readJson<T>(path: string, schema: z.ZodType<T>): Promise<Readout<T>> {
  let text: string
  try {
    text = await readSmallFile(path)
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return { kind: 'missing' }
    return { kind: 'damaged', problem: codeOf(error) ?? (error as Error).message }
  }
  const value = parseJson(text, schema)
  return value ? { kind: 'ok', value } : { kind: 'damaged', problem: 'not the JSON Syncscope writes' }
}

export const readBackReference = (pgdata: string) => readJson(join(pgdata, BACK_REFERENCE_FILE), BackReferenceSchema)

/** What a data folder says about the cluster `pgdata` paired under `id`. */
export type RecordVerdict =
  | { kind: 'names' }
  | { kind: 'gone' }
  | { kind: 'no-record' }
  | { kind: 'other'; pgdata: string }
  | { kind: 'unreadable'; problem: string }

export async function recordVerdict(dataDir: string, pgdata: string, id: string): Promise<RecordVerdict> {
  const info = await lstat(dataDir).catch((error: unknown) => error as NodeJS.ErrnoException)
  if (info instanceof Error) {
    if (info.code === 'ENOENT' || info.code === 'ENOTDIR') return { kind: 'gone' }
    return { kind: 'unreadable', problem: info.code ?? info.message }
  }
  if (!info.isDirectory()) return { kind: 'no-record' }
  const record = await readJson(join(dataDir, RECORD_FILE), RecordSchema)
  if (record.kind === 'missing') return { kind: 'no-record' }
  if (record.kind === 'damaged') return { kind: 'unreadable', problem: record.problem }
  return record.value.pgdata === pgdata && recordId(record.value) === id
    ? { kind: 'names' }
    : { kind: 'other', pgdata: record.value.pgdata }
}

/** The cluster's hard link to its data folder's record: a second link to that file exists, and it names this cluster. */
export async function linkedRecordNames(pgdata: string, id: string): Promise<boolean> {
  const file = join(pgdata, RECORD_LINK_FILE)
  const info = await lstat(file).catch(() => null)
  if (!info?.isFile() || info.nlink < 2) return false
  const record = await readJson(file, RecordSchema)
  return record.kind === 'ok' && record.value.pgdata === pgdata && recordId(record.value) === id
}

/** The device of the nearest folder of `path` that exists: where a deleted data folder was, or its mount point. */
export async function nearestDevice(path: string): Promise<number | null> {
  for (let current = path; ; current = dirname(current)) {
    const info = await stat(current).catch(() => null)
    if (info) return info.dev
    if (current === dirname(current)) return null
  }
}

/** Reads the data folder's record; null when there is none. A damaged record stops the start: it names a cluster. */
export async function readRecord(dataDir: string): Promise<ClusterRecord | null> {
  const file = join(dataDir, RECORD_FILE)
  const text = await readFile(file, 'utf8').catch(() => null)
  if (text === null) return null
  const record = parseJson(text, RecordSchema)
  if (!record)
    throw new Error(
      `${file} is damaged: it should name the cluster's folder as {"pgdata": "…"}; fix it or delete it to start a new cluster`
    )
  return record
}

export async function writeRecord(dataDir: string, record: Required<ClusterRecord>): Promise<void> {
  await writeAtomically(join(dataDir, RECORD_FILE), JSON.stringify(record), 0o600)
}

/**
 * Makes the cluster name this data folder (written into the folder being built, or into the cluster at each start):
 * the back-reference, rewritten when it differs, and the hard link to the record, remade when it is not that file.
 */
export async function writeBackReference(pgdata: string, dataDir: string, id: string): Promise<void> {
  const here = await realpath(dataDir)
  const wanted: BackReference = { dataDir: here, id, device: (await stat(here)).dev }
  const current = await readBackReference(pgdata)
  const same =
    current.kind === 'ok' &&
    current.value.dataDir === wanted.dataDir &&
    current.value.id === wanted.id &&
    current.value.device === wanted.device
  if (!same) await replaceFileIn(pgdata, BACK_REFERENCE_FILE, JSON.stringify(wanted))
  await linkRecord(pgdata, join(here, RECORD_FILE))
}

async function linkRecord(pgdata: string, recordFile: string): Promise<void> {
  const linked = join(pgdata, RECORD_LINK_FILE)
  const [record, existing] = await Promise.all([stat(recordFile), lstat(linked).catch(() => null)])
  if (existing && existing.ino === record.ino && existing.dev === record.dev) return
  if (existing) await unlink(linked)
  // Another file system (EXDEV) or a system that refuses links: the back-reference alone decides.
  await link(recordFile, linked).catch((error: unknown) => {
    if (!['EXDEV', 'EPERM', 'EMLINK', 'ENOTSUP', 'EOPNOTSUPP'].includes(codeOf(error) ?? '')) throw error
  })
}

/**
 * At each start of `dataDir` on its existing cluster: a cluster that names another data folder is taken over when that
 * folder no longer names it (this one was moved or restored there), and refused when it still does (a copy).
 */
export async function pairCluster(
  dataDir: string,
  record: Required<ClusterRecord>,
  log: (line: string) => void
): Promise<void> {
  const here = await realpath(dataDir)
  const reference = await readBackReference(record.pgdata)
  if (reference.kind === 'ok' && reference.value.dataDir !== here) {
    const other = reference.value.dataDir
    const verdict = await recordVerdict(other, record.pgdata, reference.value.id)
    if (verdict.kind === 'names' && (await realpath(other).catch(() => other)) !== here)
      throw new Error(
        `${record.pgdata} is the cluster of ${other}, and ${dataDir} names it too (a copy of that data folder?): delete ${join(dataDir, RECORD_FILE)} to give this one a new, empty cluster`
      )
    log(`embedded Postgres: the cluster ${record.pgdata} was ${other}'s, which no longer names it; it is now ${here}'s`)
  }
  if (reference.kind === 'damaged')
    log(`embedded Postgres: the back-reference of ${record.pgdata} was damaged (${reference.problem}); rewriting it`)
  await writeBackReference(record.pgdata, dataDir, record.id)
}
