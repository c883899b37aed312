import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { startTestPostgres } from '../test/support/postgres'
import { resolveDefinition } from '../src/main/shapes/definition'
import { readTableInfo } from '../src/main/shapes/table-info'
import { runSnapshot } from '../src/main/shapes/snapshot'
import { loadParser } from '../src/main/shapes/where'
async function main() {
  await loadParser()
  const db = await startTestPostgres()
  const pool = new pg.Pool({ connectionString: db.url, types: { getTypeParser: () => (v: string) => v } })
  await pool.query('CREATE TABLE big (id bigint PRIMARY KEY, owner int NOT NULL, title text, amount numeric(12,2), done boolean, created timestamptz)')
  await pool.query(`INSERT INTO big SELECT g, g % 1000, 'row ' || g || ' of the benchmark', (g % 10000) / 7.0, g % 3 = 0, timestamptz '2025-01-01' + g * interval '1 second' FROM generate_series(1, 300000) g`)
  await pool.query('VACUUM ANALYZE big')
  const definition = await resolveDefinition({ table: 'big', columns: null, queryableColumns: null, where: null, params: {}, replica: 'default', log: 'full' }, (s, n) => readTableInfo(pool, s, n))
  for (let i = 0; i < 3; i++) {
    const dir = mkdtempSync(join(tmpdir(), 'snap-'))
    const cpu = process.cpuUsage(); const t = Date.now()
    await runSnapshot(pool, dir, 10 * 1024 * 1024, { definition, withRows: true }, { onSnapshot: () => undefined, onChunk: () => undefined })
    const used = process.cpuUsage(cpu)
    console.log('wall', Date.now() - t, 'ms; node cpu', ((used.user + used.system) / 1000).toFixed(0), 'ms')
  }
  await pool.end(); await db.destroy()
}
void main()
