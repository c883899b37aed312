import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { cp, mkdir, mkdtemp, readdir, rename, rm, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, expect } from 'vitest'
import { listClusters, pruneClusters, removeClusters } from '../../src/main/db/cluster-inventory'
import { BACK_REFERENCE_FILE, RECORD_FILE, RECORD_LINK_FILE } from '../../src/main/db/cluster-pairing'
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../src/main/db/embedded'
import { describeWith, itWith } from '../support/facility-tests'

/**
 * Every test here uses a clusters folder of its own (never /var/lib/syncscope/clusters, where other runs on this
 * machine keep theirs), and real embedded Postgres clusters in it.
 */
describeWith(['root', 'linux'], 'clusters that outlive their data folder', () => {
  let root: string
  const temporary: string[] = []
  const running: EmbeddedPostgresHandle[] = []

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'syncscope-clusters-root-'))
    temporary.push(root)
  })
  afterAll(async () => {
    for (const handle of running) await handle.stop()
    for (const path of temporary) await rm(path, { recursive: true, force: true })
  })

  /** A data folder (the app's `postgres` folder) in a temporary folder of its own. */
  async function newDataFolder(): Promise<string> {
    const parent = await mkdtemp(join(tmpdir(), 'syncscope-clusters-data-'))
    temporary.push(parent)
    return join(parent, 'postgres')
  }

  async function start(dataDir: string, log: string[] = []): Promise<EmbeddedPostgresHandle> {
    const handle = await startEmbeddedPostgres({ dataDir, clustersRoot: root, log: (line) => log.push(line) })
    running.push(handle)
    return handle
  }

  async function query(handle: EmbeddedPostgresHandle, sql: string): Promise<unknown[]> {
    const client = new pg.Client(handle.url)
    await client.connect()
    try {
      return (await client.query(sql)).rows
    } finally {
      await client.end()
    }
  }

  /** A stopped cluster with a table in it, and its data folder. */
  async function stoppedCluster(): Promise<{ dataDir: string; id: string; path: string }> {
    const dataDir = await newDataFolder()
    const handle = await start(dataDir)
    await query(handle, 'CREATE TABLE marker (n int); INSERT INTO marker VALUES (42)')
    await handle.stop()
    return { dataDir, id: basename(handle.clusterDir), path: handle.clusterDir }
  }

  const inRoot = async () => (await readdir(root)).filter((name) => !name.startsWith('.')).sort()
  const stateOf = async (id: string) => (await listClusters(root)).find((cluster) => cluster.id === id)

  itWith(
    ['root'],
    "removes a deleted data folder's cluster at the next start, keeps the clusters of live ones",
    async () => {
      const live = await stoppedCluster()
      const deleted = await stoppedCluster()
      expect(JSON.parse(readFileSync(join(deleted.path, BACK_REFERENCE_FILE), 'utf8'))).toMatchObject({
        dataDir: deleted.dataDir,
        id: deleted.id
      })
      expect(JSON.parse(readFileSync(join(deleted.dataDir, RECORD_FILE), 'utf8'))).toEqual({
        pgdata: deleted.path,
        id: deleted.id
      })
      expect(await stateOf(deleted.id)).toMatchObject({
        inUse: true,
        orphaned: false,
        running: false,
        dataFolder: deleted.dataDir
      })
      await rm(dirname(deleted.dataDir), { recursive: true })
      expect(await stateOf(deleted.id)).toMatchObject({
        inUse: false,
        orphaned: true,
        reason: `its data folder ${deleted.dataDir} was deleted`
      })

      const log: string[] = []
      const next = await start(await newDataFolder(), log)
      expect(existsSync(deleted.path)).toBe(false)
      expect(log.filter((line) => line.includes('removed'))).toEqual([
        expect.stringMatching(
          new RegExp(
            `^embedded Postgres: removed 1 cluster\\(s\\) of ${root} whose data folder is gone \\(\\d+(\\.\\d)? MiB\\): ${deleted.id}$`
          )
        )
      ])
      expect(await inRoot()).toEqual([live.id, basename(next.clusterDir)].sort())
      await next.stop()

      const again = await start(live.dataDir)
      expect(again.clusterDir).toBe(live.path)
      expect(await query(again, 'SELECT n FROM marker')).toEqual([{ n: 42 }])
      await again.stop()
    }
  )

  itWith(['root'], 'never touches a cluster a Postgres runs on, even with its data folder gone', async () => {
    const dataDir = await newDataFolder()
    const handle = await start(dataDir)
    await rm(dirname(dataDir), { recursive: true })
    const id = basename(handle.clusterDir)
    expect(await stateOf(id)).toMatchObject({ running: true, orphaned: true })
    expect((await pruneClusters(root)).removed).toEqual([])
    expect(await removeClusters(root, [id])).toEqual([
      { id, removed: false, why: 'a Postgres runs on it: stop the Syncscope that uses it first' }
    ])
    expect(await query(handle, 'SELECT 1 AS one')).toEqual([{ one: 1 }])
    await handle.stop()
    expect((await pruneClusters(root)).removed.map((cluster) => cluster.id)).toEqual([id])
    expect(existsSync(handle.clusterDir)).toBe(false)
  })

  itWith(
    ['root'],
    'a damaged back-reference never gets a cluster removed by prune; its data folder repairs it',
    async () => {
      const cluster = await stoppedCluster()
      await writeFile(join(cluster.path, BACK_REFERENCE_FILE), '{"dataDir": ')
      expect(await stateOf(cluster.id)).toMatchObject({
        dataFolder: null,
        inUse: false,
        orphaned: false,
        reason:
          "its back-reference is damaged (not the JSON Syncscope writes): its data folder's next start rewrites it"
      })
      expect((await pruneClusters(root)).removed).toEqual([])

      const log: string[] = []
      const again = await start(cluster.dataDir, log)
      expect(log).toContain(
        `embedded Postgres: the back-reference of ${cluster.path} was damaged (not the JSON Syncscope writes); rewriting it`
      )
      expect(await query(again, 'SELECT n FROM marker')).toEqual([{ n: 42 }])
      await again.stop()
      expect(await stateOf(cluster.id)).toMatchObject({ dataFolder: cluster.dataDir, orphaned: false })

      // Damaged, and its data folder gone: which data folder it served cannot be known, so only a person removes it.
      await writeFile(join(cluster.path, BACK_REFERENCE_FILE), 'garbage')
      await rm(dirname(cluster.dataDir), { recursive: true })
      expect((await pruneClusters(root)).removed).toEqual([])
      expect(existsSync(join(cluster.path, 'PG_VERSION'))).toBe(true)
      const [outcome] = await removeClusters(root, [cluster.id])
      expect(outcome).toMatchObject({ id: cluster.id, removed: true })
      expect(existsSync(cluster.path)).toBe(false)
    }
  )

  itWith(
    ['root'],
    'a cluster an older version made (no back-reference) is kept until its data folder pairs it',
    async () => {
      const cluster = await stoppedCluster()
      await rm(join(cluster.path, BACK_REFERENCE_FILE))
      await rm(join(cluster.path, RECORD_LINK_FILE))
      await writeFile(join(cluster.dataDir, RECORD_FILE), JSON.stringify({ pgdata: cluster.path }), { mode: 0o600 })
      expect(await stateOf(cluster.id)).toMatchObject({ dataFolder: null, inUse: false, orphaned: false })
      expect((await pruneClusters(root)).removed).toEqual([])

      const again = await start(cluster.dataDir)
      expect(await query(again, 'SELECT n FROM marker')).toEqual([{ n: 42 }])
      await again.stop()
      expect(JSON.parse(readFileSync(join(cluster.dataDir, RECORD_FILE), 'utf8'))).toEqual({
        pgdata: cluster.path,
        id: cluster.id
      })
      await rm(dirname(cluster.dataDir), { recursive: true })
      expect((await pruneClusters(root)).removed.map((removed) => removed.id)).toEqual([cluster.id])
    }
  )

  itWith(['root'], 'a data folder made again at the same path gets a new cluster, and the old one goes', async () => {
    const first = await stoppedCluster()
    await rm(first.dataDir, { recursive: true })
    await mkdir(first.dataDir, { mode: 0o700 })
    const log: string[] = []
    const second = await start(first.dataDir, log)
    expect(second.clusterDir).not.toBe(first.path)
    expect(existsSync(first.path)).toBe(false)
    expect(log.some((line) => line.includes(`removed 1 cluster(s)`) && line.endsWith(first.id))).toBe(true)
    await second.stop()
  })

  itWith(['root'], 'a moved data folder keeps its cluster; a copy of one is refused', async () => {
    const cluster = await stoppedCluster()
    const moved = join(await mkdtemp(join(tmpdir(), 'syncscope-clusters-moved-')), 'postgres')
    temporary.push(dirname(moved))
    await rename(cluster.dataDir, moved)
    expect(await stateOf(cluster.id)).toMatchObject({
      inUse: true,
      orphaned: false,
      reason: `its data folder moved away from ${cluster.dataDir} (its record still exists): its next start records where`
    })
    expect((await pruneClusters(root)).removed).toEqual([])

    const log: string[] = []
    const again = await start(moved, log)
    expect(again.clusterDir).toBe(cluster.path)
    expect(await query(again, 'SELECT n FROM marker')).toEqual([{ n: 42 }])
    expect(log).toContain(
      `embedded Postgres: the cluster ${cluster.path} was ${cluster.dataDir}'s, which no longer names it; it is now ${moved}'s`
    )
    await again.stop()
    expect(await stateOf(cluster.id)).toMatchObject({ dataFolder: moved, reason: `in use by ${moved}` })

    const copy = join(await mkdtemp(join(tmpdir(), 'syncscope-clusters-copy-')), 'postgres')
    temporary.push(dirname(copy))
    await cp(moved, copy, { recursive: true })
    await expect(startEmbeddedPostgres({ dataDir: copy, clustersRoot: root })).rejects.toThrow(
      `${cluster.path} is the cluster of ${moved}, and ${copy} names it too (a copy of that data folder?): delete ${join(copy, RECORD_FILE)} to give this one a new, empty cluster`
    )
    expect(await removeClusters(root, [cluster.id])).toEqual([
      {
        id: cluster.id,
        removed: false,
        why: `in use by ${moved}: delete that data folder first (its cluster goes with the next prune)`
      }
    ])
  })

  itWith(['root'], 'keeps a cluster whose data folder was on a file system that is not mounted now', async () => {
    const cluster = await stoppedCluster()
    const file = join(cluster.path, BACK_REFERENCE_FILE)
    const reference = JSON.parse(readFileSync(file, 'utf8')) as { device: number }
    // As if the data folder had been on another disk: where it was, the nearest folder is now on this one.
    await writeFile(file, JSON.stringify({ ...reference, device: reference.device + 1 }))
    await rm(dirname(cluster.dataDir), { recursive: true })
    expect(await stateOf(cluster.id)).toMatchObject({
      inUse: false,
      orphaned: false,
      reason: `its data folder ${cluster.dataDir} is missing, and the file system it was on is not mounted`
    })
    expect((await pruneClusters(root)).removed).toEqual([])
    expect(await removeClusters(root, [cluster.id])).toMatchObject([{ id: cluster.id, removed: true }])
  })

  itWith(
    ['root'],
    'removes what a killed initdb or prune left half-made, never what a live process is making or just made',
    async () => {
      const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
        encoding: 'utf8'
      })
      const deadPid = Number(dead.stdout)
      const left = [`.aaaa.initdb-${deadPid}`, `.bbbb.pruning-${deadPid}`]
      const alive = `.cccc.initdb-${process.pid}`
      for (const name of [...left, alive]) {
        await mkdir(join(root, name))
        await writeFile(join(root, name, 'PG_VERSION'), '18\n')
      }
      await writeFile(join(root, `.aaaa.initdb-${deadPid}.pwfile`), 'x')
      const young = `.dddd.initdb-${deadPid}`
      await mkdir(join(root, young))
      // an hour old: past the age under which a folder of a gone process is still left alone (another pid namespace)
      const hourAgo = new Date(Date.now() - 3_600_000)
      for (const name of [...left, `.aaaa.initdb-${deadPid}.pwfile`, alive])
        await utimes(join(root, name), hourAgo, hourAgo)
      const { leftovers } = await pruneClusters(root)
      expect(leftovers.sort()).toEqual([...left, `.aaaa.initdb-${deadPid}.pwfile`].sort())
      expect(existsSync(join(root, alive))).toBe(true)
      expect(existsSync(join(root, young))).toBe(true)
      expect((await listClusters(root)).map((cluster) => cluster.id)).not.toContain(alive)
      for (const name of [alive, young]) await rm(join(root, name), { recursive: true })
    }
  )
})
