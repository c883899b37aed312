import type pg from 'pg'

export type Rows = Map<string, Record<string, string | null>>

/** Shapes on `items (id int PRIMARY KEY, grp int NOT NULL, val int, note text)` that random writes move rows between. */
export const ITEM_SHAPES: Array<Record<string, string>> = [
  { table: 'items' },
  { table: 'items', where: 'grp = 1' },
  { table: 'items', where: 'grp IN (2, 3)' },
  { table: 'items', where: 'val > 50' },
  { table: 'items', where: 'grp = 1 AND val < 30', columns: 'id,val' },
  { table: 'items', where: "note LIKE 'n1%' OR val IS NULL", replica: 'full' }
]

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The rows a shape of ITEM_SHAPES holds in Postgres now, keyed as its messages key them. */
export async function expectedItems(pool: pg.Pool, shape: Record<string, string>): Promise<Rows> {
  const columns = shape.columns ?? 'id,grp,val,note'
  const { rows } = await pool.query<Record<string, string | null>>(
    `SELECT ${columns} FROM items ${shape.where ? `WHERE ${shape.where}` : ''}`
  )
  return new Map(rows.map((row) => [`"public"."items"/"${row.id}"`, row]))
}

/**
 * Random transactions on `items`: inserts, updates of filtered columns (moving rows between shapes), deletes, several
 * rows at once; a transaction that fails (Postgres going away) is skipped. `pauseMs`: the longest random pause after each.
 */
export async function writeRandomItems(pool: pg.Pool, transactions: number, seed: number, pauseMs = 0): Promise<void> {
  let state = seed
  const random = (n: number) => {
    state = (state * 1103515245 + 12345) % 2 ** 31
    return state % n
  }
  for (let t = 0; t < transactions; t++) {
    const client = await pool.connect().catch(() => null)
    if (!client) {
      await sleep(100)
      continue
    }
    client.on('error', () => undefined)
    try {
      await client.query('BEGIN')
      for (let op = 0, ops = 1 + random(4); op < ops; op++) {
        const id = random(120)
        const kind = random(10)
        if (kind < 4) {
          await client.query(
            'INSERT INTO items VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO UPDATE SET grp = EXCLUDED.grp, val = EXCLUDED.val',
            [id, random(4), random(10) === 0 ? null : random(100), `n${random(30)}`]
          )
        } else if (kind < 8) {
          await client.query(
            'UPDATE items SET grp = $2, val = CASE WHEN $3 THEN NULL ELSE val + $4 - 40 END WHERE id = $1',
            [id, random(4), random(12) === 0, random(80)]
          )
        } else {
          await client.query('DELETE FROM items WHERE id = $1', [id])
        }
      }
      await client.query('COMMIT')
    } catch {
      await client.query('ROLLBACK').catch(() => undefined)
    } finally {
      client.release()
    }
    if (pauseMs > 0) await sleep(random(pauseMs))
  }
}
