import { lstatSync, readFileSync, statSync } from 'node:fs'
import { mkdtemp, symlink, unlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect } from 'vitest'
import { BACK_REFERENCE_FILE, RECORD_LINK_FILE } from '../../src/main/db/cluster-pairing'
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../src/main/db/embedded'
import { describeWith, itWith } from '../support/facility-tests'
import { removeDataDir } from '../support/postgres'

describeWith(['root'], 'files root writes into a cluster the postgres user owns', () => {
  let root: string
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'syncscope-cluster-files-'))
  })
  afterAll(async () => {
    await removeDataDir(root)
  })

  /**
   * The postgres user (who owns the cluster) turns each of `names` into a symlink to a root-only file while the
   * cluster is stopped; then Syncscope starts it again, as root.
   */
  async function startWithPlantedLinks(names: string[]): Promise<{ again: EmbeddedPostgresHandle; victims: string[] }> {
    const dataDir = join(root, 'postgres')
    const first = await startEmbeddedPostgres({ dataDir })
    await first.stop()
    const victims: string[] = []
    for (const name of names) {
      const victim = join(root, `victim-${name}`)
      await writeFile(victim, 'root-only\n', { mode: 0o600 })
      await unlink(join(first.clusterDir, name))
      await symlink(victim, join(first.clusterDir, name))
      victims.push(victim)
    }
    return { again: await startEmbeddedPostgres({ dataDir }), victims }
  }

  const untouched = (victim: string) => {
    expect(readFileSync(victim, 'utf8')).toBe('root-only\n')
    expect(statSync(victim).uid).toBe(0)
  }

  itWith(
    ['root'],
    'a pg_hba.conf the postgres user turned into a symlink is replaced, its target left alone',
    async () => {
      const { again, victims } = await startWithPlantedLinks(['pg_hba.conf'])
      try {
        victims.forEach(untouched)
        expect(lstatSync(join(again.clusterDir, 'pg_hba.conf')).isFile()).toBe(true)
      } finally {
        await again.stop()
      }
    }
  )

  itWith(
    ['root'],
    'back-reference files the postgres user turned into symlinks are replaced, their targets left alone',
    async () => {
      const { again, victims } = await startWithPlantedLinks([BACK_REFERENCE_FILE, RECORD_LINK_FILE])
      try {
        victims.forEach(untouched)
        const reference = join(again.clusterDir, BACK_REFERENCE_FILE)
        expect(lstatSync(reference).isFile()).toBe(true)
        expect(JSON.parse(readFileSync(reference, 'utf8'))).toMatchObject({ dataDir: again.dataDir })
        expect(lstatSync(join(again.clusterDir, RECORD_LINK_FILE)).ino).toBe(
          statSync(join(again.dataDir, 'syncscope-cluster.json')).ino
        )
      } finally {
        await again.stop()
      }
    }
  )
})
