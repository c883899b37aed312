import type pg from 'pg'

/**
 * The routing workload of issue 12 item 11 (and bench target b): many shapes whose where the router cannot index
 * (no equality conjunct), so every changed row is evaluated against every one of them, and one transaction that
 * updates every row of the table, moving rows into and out of the shapes.
 */
export const TASK_ROWS = 3_000

export async function createTasks(pool: pg.Pool): Promise<void> {
  await pool.query(
    'CREATE TABLE tasks (id int PRIMARY KEY, title text NOT NULL, priority int NOT NULL, owner int NOT NULL, done boolean NOT NULL, note text)'
  )
  await pool.query(
    `INSERT INTO tasks SELECT g, 'task-' || g || ' tag' || (g * 7 % 2000) || ' end', g * 37 % 100000, g % 4000, g % 2 = 0,
       CASE WHEN g % 10 = 0 THEN NULL ELSE 'n' || g END
     FROM generate_series(1, ${TASK_ROWS}) g`
  )
}

/**
 * One transaction changing every row, in every column a where reads but `owner` and `note`, so rows move between
 * shapes; `round` varies the new titles.
 */
export const updateAllTasks = (round = 0): string =>
  `UPDATE tasks SET priority = (priority * 7 + 3) % 100000, done = NOT done, title = 'task-' || id || ' tag' || (id * ${11 + 2 * round} % 2000) || ' end'`

/** The keys (`"public"."tasks"/"<id>"`) each where selects, asked of Postgres in one statement. */
export async function selectedKeys(
  pool: pg.Pool | pg.PoolClient,
  wheres: readonly string[]
): Promise<Array<Set<string>>> {
  const union = wheres.map((where, i) => `SELECT ${i} AS shape, id FROM tasks WHERE ${where}`).join(' UNION ALL ')
  const { rows } = await pool.query<{ shape: number; id: number }>(union)
  const sets = wheres.map(() => new Set<string>())
  for (const row of rows) sets[row.shape]?.add(`"public"."tasks"/"${row.id}"`)
  return sets
}

/** The where of shape `i`: LIKE/ILIKE, ranges, arithmetic, functions and OR, each matching a few rows. */
export function unindexedWhere(i: number): string {
  switch (i % 6) {
    case 0:
      return `title LIKE '%tag${i} %'`
    case 1:
      return `priority > ${99_990 - (i % 50)}`
    case 2:
      return `title ILIKE '%TAG${i} %' OR priority < ${i % 7}`
    case 3:
      return `(owner % 2000 = ${i} AND done) OR lower(title) LIKE 'task-${i} %'`
    case 4:
      return `priority BETWEEN ${i * 40} AND ${i * 40 + 20} AND NOT done`
    default:
      return `note IS NULL AND id % 1000 = ${i % 1000} OR upper(title) LIKE '%TAG${i} END'`
  }
}
