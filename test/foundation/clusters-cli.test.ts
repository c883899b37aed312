import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { afterAll, beforeAll, expect } from 'vitest'
import { ClusterListSchema } from '../../src/shared/contract/db'
import { BACK_REFERENCE_FILE, RECORD_LINK_FILE } from '../../src/main/db/cluster-pairing'
import { startEmbeddedPostgres } from '../../src/main/db/embedded'
import { endCliRuns, runCli, startServe } from '../support/cli-process'
import { describeWith, itWith } from '../support/facility-tests'
import { startTestShapeServer } from '../support/shape-server'

/** `syncscope clusters …` and `syncscope serve` on a clusters folder of this file's own (SYNCSCOPE_CLUSTERS_DIR). */
describeWith(['root', 'linux'], 'syncscope clusters', () => {
  let root: string
  let env: NodeJS.ProcessEnv
  const temporary: string[] = []

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'syncscope-clusters-cli-'))
    temporary.push(root)
    env = { ...process.env, SYNCSCOPE_CLUSTERS_DIR: root }
  })
  afterAll(async () => {
    await endCliRuns()
    for (const path of temporary) await rm(path, { recursive: true, force: true })
  })

  /** A stopped cluster in `root`; its data folder deleted when `orphan`. */
  async function cluster(orphan: boolean): Promise<{ id: string; path: string; dataDir: string }> {
    const parent = await mkdtemp(join(tmpdir(), 'syncscope-clusters-cli-data-'))
    temporary.push(parent)
    const handle = await startEmbeddedPostgres({ dataDir: join(parent, 'postgres'), clustersRoot: root })
    await handle.stop()
    if (orphan) await rm(parent, { recursive: true })
    return { id: basename(handle.clusterDir), path: handle.clusterDir, dataDir: handle.dataDir }
  }

  async function cli(args: string[]) {
    const run = runCli(['clusters', ...args], env)
    const code = await run.exited
    return { code, ...run.output() }
  }

  itWith(
    ['root'],
    'lists clusters with size and state, prunes the orphaned, removes unknown ones by name',
    async () => {
      const live = await cluster(false)
      const unknown = await cluster(false)
      for (const name of [BACK_REFERENCE_FILE, RECORD_LINK_FILE]) await rm(join(unknown.path, name))
      await rm(dirname(unknown.dataDir), { recursive: true })
      // last: each start prunes
      const orphan = await cluster(true)

      const list = await cli(['list'])
      expect(list.code).toBe(0)
      const lines = list.stdout.split('\n')
      expect(lines[0]).toMatch(new RegExp(`^3 cluster\\(s\\) in ${root}, \\d+(\\.\\d)? MiB$`))
      expect(lines).toContain(
        lines.find(
          (line) => line.startsWith(live.id) && / MiB {2}in use {4}in use by /.test(line) && line.endsWith(live.dataDir)
        )
      )
      expect(
        lines.some(
          (line) =>
            line.startsWith(orphan.id) && line.includes(` MiB  orphaned  its data folder ${orphan.dataDir} was deleted`)
        )
      ).toBe(true)
      expect(
        lines.some((line) => line.startsWith(unknown.id) && line.includes(' MiB  unknown   made before clusters named'))
      ).toBe(true)
      expect(list.stdout).toContain('`syncscope clusters prune` removes the 1 orphaned one(s) that are not running')

      const json = ClusterListSchema.parse(JSON.parse((await cli(['list', '--json'])).stdout))
      expect(json.root).toBe(root)
      expect(
        json.clusters.map((entry) => [entry.id, entry.inUse, entry.orphaned, entry.running, entry.dataFolder])
      ).toEqual(
        [
          [live.id, true, false, false, live.dataDir],
          [orphan.id, false, true, false, orphan.dataDir],
          [unknown.id, false, false, false, null]
        ].sort((a, b) => String(a[0]).localeCompare(String(b[0])))
      )
      expect(json.clusters.every((entry) => entry.sizeBytes > 1024 * 1024 && entry.lastStarted !== null)).toBe(true)

      const prune = await cli(['prune'])
      expect(prune.code).toBe(0)
      expect(prune.stdout).toMatch(
        new RegExp(
          `^removed ${orphan.id} \\(\\d+(\\.\\d)? MiB\\): its data folder ${orphan.dataDir} was deleted\\n1 cluster\\(s\\) removed from ${root}, \\d+(\\.\\d)? MiB freed\\n$`
        )
      )
      expect(existsSync(orphan.path)).toBe(false)
      expect(existsSync(unknown.path)).toBe(true)

      const refused = await cli(['remove', live.id, 'no-such-cluster'])
      expect(refused.code).toBe(1)
      expect(refused.stderr).toBe(
        `syncscope clusters: kept ${live.id}: in use by ${live.dataDir}: delete that data folder first (its cluster goes with the next prune)\n` +
          `syncscope clusters: kept no-such-cluster: ${root} holds no cluster no-such-cluster\n`
      )
      const removed = await cli(['remove', '--unknown'])
      expect(removed.code).toBe(0)
      expect(removed.stdout).toMatch(new RegExp(`^removed ${unknown.id} \\(\\d+(\\.\\d)? MiB\\)\\n$`))
      expect(existsSync(unknown.path)).toBe(false)
      expect(existsSync(live.path)).toBe(true)
    }
  )

  itWith(['root'], 'syncscope serve removes the clusters of deleted data folders as it starts', async () => {
    const orphan = await cluster(true)
    const dataDir = await mkdtemp(join(tmpdir(), 'syncscope-clusters-cli-serve-'))
    temporary.push(dataDir)
    const serve = await startServe(['--port', '0', '--data-dir', dataDir], env)
    try {
      expect(existsSync(orphan.path)).toBe(false)
      expect(serve.output().stderr).toMatch(
        new RegExp(
          `embedded Postgres: removed 1 cluster\\(s\\) of ${root} whose data folder is gone \\(.+\\): ${orphan.id}\\n`
        )
      )
    } finally {
      serve.child.kill('SIGTERM')
      await serve.exited
    }
  })

  itWith(['root'], 'refuses wrong arguments with exit code 2', async () => {
    for (const args of [
      ['frobnicate'],
      ['list', 'extra'],
      ['remove'],
      ['remove', 'x', '--unknown'],
      ['list', '--nope']
    ]) {
      const run = await cli(args)
      expect(run.code, args.join(' ')).toBe(2)
      expect(run.stderr).toMatch(/^syncscope clusters: .+\n\nusage:\n/)
    }
    const relative = runCli(['clusters', 'list'], { ...env, SYNCSCOPE_CLUSTERS_DIR: 'clusters' })
    expect(await relative.exited).toBe(2)
    expect(relative.output().stderr).toContain('SYNCSCOPE_CLUSTERS_DIR must be an absolute path, not clusters')
  })
})

describeWith(['root', 'linux'], 'the db.clusters call', () => {
  itWith(['root'], "lists this app's own cluster: running, in use, its size", async () => {
    const server = await startTestShapeServer()
    try {
      const result = await server.app.dispatch('db.clusters', {})
      if (!result.ok) throw new Error(JSON.stringify(result.body))
      const list = ClusterListSchema.parse(result.value)
      expect(list.root).toBe(process.env.SYNCSCOPE_CLUSTERS_DIR)
      const own = list.clusters.find((entry) => entry.current)
      expect(own).toMatchObject({
        dataFolder: join(server.dataDir, 'postgres'),
        running: true,
        inUse: true,
        orphaned: false,
        reason: `in use by ${join(server.dataDir, 'postgres')}`
      })
      expect(own?.sizeBytes).toBeGreaterThan(1024 * 1024)
    } finally {
      await server.close()
    }
  })
})
