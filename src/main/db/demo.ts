import { readFile } from 'node:fs/promises'
import type pg from 'pg'
import { resourcePath } from '../resources'

/** Creates the demo schema and its seed data in one transaction. */
export async function loadDemoData(pool: pg.Pool): Promise<void> {
  const [schema, seed] = await Promise.all([
    readFile(resourcePath('demo/schema.sql'), 'utf8'),
    readFile(resourcePath('demo/seed.sql'), 'utf8')
  ])
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    await client.query(schema)
    await client.query(seed)
    await client.query('COMMIT')
  } catch (error) {
    await client.query('ROLLBACK')
    throw error
  } finally {
    client.release()
  }
}
