import { lstatSync, readFileSync, statSync } from 'node:fs'
import { mkdtemp, rm, symlink, unlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect } from 'vitest'
import { BACK_REFERENCE_FILE, RECORD_LINK_FILE } from '../../src/main/db/cluster-pairing'
import { startEmbeddedPostgres } from '../../src/main/db/embedded'
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

  itWith(
    ['root'],
    'a pg_hba.conf the postgres user turned into a symlink is replaced, its target left alone',
    async () => {
      const dataDir = join(root, 'postgres')
      const first = await startEmbeddedPostgres({ dataDir })
      await first.stop()
      const victim = join(root, 'victim')
      await writeFile(victim, 'root-only\n', { mode: 0o600 })
      await unlink(join(first.clusterDir, 'pg_hba.conf'))
      await symlink(victim, join(first.clusterDir, 'pg_hba.conf'))
      const again = await startEmbeddedPostgres({ dataDir })
      try {
        expect(readFileSync(victim, 'utf8')).toBe('root-only\n')
        expect(statSync(victim).uid).toBe(0)
        expect(lstatSync(join(again.clusterDir, 'pg_hba.conf')).isFile()).toBe(true)
      } finally {
        await again.stop()
        await rm(victim, { force: true })
      }
    }
  )

  itWith(
    ['root'],
    'back-reference files the postgres user turned into symlinks are replaced, their targets left alone',
    async () => {
      const dataDir = join(root, 'postgres')
      const first = await startEmbeddedPostgres({ dataDir })
      await first.stop()
      const victims = [join(root, 'victim-reference'), join(root, 'victim-link')]
      for (const [index, name] of [BACK_REFERENCE_FILE, RECORD_LINK_FILE].entries()) {
        await writeFile(victims[index] as string, 'root-only\n', { mode: 0o600 })
        await unlink(join(first.clusterDir, name))
        await symlink(victims[index] as string, join(first.clusterDir, name))
      }
      const again = await startEmbeddedPostgres({ dataDir })
      try {
        for (const victim of victims) expect(readFileSync(victim, 'utf8')).toBe('root-only\n')
        const reference = join(again.clusterDir, BACK_REFERENCE_FILE)
        expect(lstatSync(reference).isFile()).toBe(true)
        expect(JSON.parse(readFileSync(reference, 'utf8'))).toMatchObject({ dataDir })
        expect(lstatSync(join(again.clusterDir, RECORD_LINK_FILE)).ino).toBe(
          statSync(join(dataDir, 'syncscope-cluster.json')).ino
        )
      } finally {
        await again.stop()
      }
    }
  )
})
