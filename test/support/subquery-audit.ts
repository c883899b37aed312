import type pg from 'pg'

/**
 * With SUBQUERY_AUDIT=1, the randomized subquery test records every row change of its tables (transaction, WAL
 * position) in `audit`, so that a failure shows what Postgres did to the rows in question beside what the clients got.
 */
export const auditing = (): boolean => Boolean(process.env.SUBQUERY_AUDIT)

export async function startAudit(pool: pg.Pool): Promise<void> {
  await pool.query(`
    CREATE TABLE audit (seq bigserial, xid xid8 DEFAULT pg_current_xact_id(), lsn pg_lsn DEFAULT pg_current_wal_insert_lsn(),
      tbl text, op text, old jsonb, new jsonb);
    CREATE FUNCTION audit_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      INSERT INTO audit (tbl, op, old, new) VALUES (TG_TABLE_NAME, TG_OP,
        CASE WHEN TG_OP <> 'INSERT' THEN to_jsonb(OLD) END, CASE WHEN TG_OP <> 'DELETE' THEN to_jsonb(NEW) END);
      RETURN NULL; END $$;
    CREATE TRIGGER audit_issues AFTER INSERT OR UPDATE OR DELETE ON issues FOR EACH ROW EXECUTE FUNCTION audit_row();
    CREATE TRIGGER audit_projects AFTER INSERT OR UPDATE OR DELETE ON projects FOR EACH ROW EXECUTE FUNCTION audit_row();
    CREATE TRIGGER audit_orgs AFTER INSERT OR UPDATE OR DELETE ON orgs FOR EACH ROW EXECUTE FUNCTION audit_row();`)
}

/** The changes of an issue, of every project it was ever in, and of those projects' orgs, in commit order of writing. */
export async function auditOf(pool: pg.Pool, issue: string): Promise<string[]> {
  const { rows } = await pool.query<Record<string, unknown>>(
    `WITH rows AS (SELECT seq, xid, lsn, tbl, op, old, new, coalesce(new, old) AS row FROM audit),
          mine AS (SELECT * FROM rows WHERE tbl = 'issues' AND row->>'id' = $1),
          projects AS (SELECT DISTINCT value AS id FROM mine, jsonb_array_elements_text(jsonb_build_array(old->'project_id', new->'project_id')) WHERE value IS NOT NULL),
          project_rows AS (SELECT * FROM rows WHERE tbl = 'projects' AND row->>'id' IN (SELECT id FROM projects)),
          orgs AS (SELECT DISTINCT value AS id FROM project_rows, jsonb_array_elements_text(jsonb_build_array(old->'org_id', new->'org_id')) WHERE value IS NOT NULL)
     SELECT seq, xid::text, lsn::text, tbl, op, old, new FROM rows
      WHERE seq IN (SELECT seq FROM mine UNION SELECT seq FROM project_rows)
         OR (tbl = 'orgs' AND row->>'id' IN (SELECT id FROM orgs))
      ORDER BY seq`,
    [issue]
  )
  return rows.map(
    (row) => `${row.xid} ${row.lsn} ${row.tbl} ${row.op} ${JSON.stringify(row.old)} → ${JSON.stringify(row.new)}`
  )
}
