import type pg from 'pg'

/** What tells one table apart from its earlier self: its oid (a recreated table has a new one) and its column fingerprint. */
export interface TableIdentity {
  oid: number
  /** As columnsFingerprint computes it from the columns readTableInfo reads. */
  fingerprint: string
}

const IDENTITY_QUERY = `
SELECT c.oid::int AS oid,
       coalesce((SELECT string_agg(a.attname || ':' || a.atttypid::int || ':' || a.atttypmod, ',' ORDER BY a.attnum)
                   FROM pg_attribute a
                  WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''), '') AS fingerprint
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')`

interface Pending {
  running: Promise<TableIdentity | null>
  /** The check that starts once `running` settles, shared by every caller that came while it ran. */
  next: Promise<TableIdentity | null> | null
}

/**
 * The current identity of tables, one cheap catalog query per check. Every caller gets the answer of a query that
 * started after it asked (so a request never sees a table as it was before a DROP or ALTER that committed before the
 * request came), while callers that come together share one query: a thousand long-polls re-requesting after a change
 * cost two queries, not a thousand.
 */
export class TableChecks {
  private readonly pending = new Map<string, Pending>()

  constructor(private readonly pool: pg.Pool) {}

  /** The table's identity now; null when no table (or partitioned table) of that name exists. */
  current(schema: string, name: string): Promise<TableIdentity | null> {
    const key = JSON.stringify([schema, name])
    const entry = this.pending.get(key)
    if (!entry) return this.start(key, schema, name).running
    const settled = (): void => undefined
    entry.next ??= entry.running.then(settled, settled).then(() => this.start(key, schema, name).running)
    return entry.next
  }

  private start(key: string, schema: string, name: string): Pending {
    const entry: Pending = { running: this.query(schema, name), next: null }
    this.pending.set(key, entry)
    const forget = (): void => {
      if (this.pending.get(key) === entry && entry.next === null) this.pending.delete(key)
    }
    entry.running.then(forget, forget)
    return entry
  }

  private query(schema: string, name: string): Promise<TableIdentity | null> {
    return tableIdentity(this.pool, schema, name)
  }
}

/** The table's identity as `db` sees it now; null when it does not exist. */
export async function tableIdentity(
  db: pg.Pool | pg.PoolClient,
  schema: string,
  name: string
): Promise<TableIdentity | null> {
  const { rows } = await db.query<{ oid: number | string; fingerprint: string }>(IDENTITY_QUERY, [schema, name])
  const row = rows[0]
  return row ? { oid: Number(row.oid), fingerprint: row.fingerprint } : null
}
