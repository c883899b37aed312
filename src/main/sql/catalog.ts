import type pg from 'pg'
import { z } from 'zod'

/**
 * The one catalog query for tables and their columns: the shape server reads one table with it, the database page
 * every user table. A table without columns gives one row whose column fields are null.
 */
const CATALOG_COLUMNS_SELECT = `
SELECT c.oid::int AS table_oid, n.nspname AS schema, c.relname AS table, c.oid::regclass::text AS qualified,
       a.attname AS name, a.atttypid::int AS type_oid, t.typname AS type, t.typtype AS typtype, t.typcategory AS typcategory,
       et.typname AS element_type, a.attndims AS dims, a.atttypmod AS typmod, a.attnotnull AS not_null,
       a.attgenerated <> '' AS generated,
       format_type(a.atttypid, a.atttypmod) AS display_type, pg_get_expr(d.adbin, d.adrelid) AS default_expr,
       (SELECT array_position(i.indkey::int2[], a.attnum) - array_lower(i.indkey::int2[], 1) FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary) AS pk_index,
       (SELECT json_agg(e.enumlabel ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid) AS enum_labels
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_type et ON et.oid = t.typelem AND t.typcategory = 'A'
LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
WHERE c.relkind IN ('r', 'p') AND `

const ONE_TABLE = `${CATALOG_COLUMNS_SELECT} n.nspname = $1 AND c.relname = $2 ORDER BY a.attnum`
const USER_TABLES = `${CATALOG_COLUMNS_SELECT} n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
ORDER BY n.nspname, c.relname, a.attnum`

const flag = z.union([z.boolean(), z.string().transform((value) => value === 't' || value === 'true')])

const catalogRowSchema = z.object({
  table_oid: z.coerce.number(),
  schema: z.string(),
  table: z.string(),
  qualified: z.string(),
  name: z.string().nullable(),
  type_oid: z.coerce.number().nullable(),
  type: z.string().nullable(),
  typtype: z.string().nullable(),
  typcategory: z.string().nullable(),
  element_type: z.string().nullable(),
  dims: z.coerce.number().nullable(),
  typmod: z.coerce.number().nullable(),
  not_null: flag.nullable(),
  generated: flag.nullable(),
  display_type: z.string().nullable(),
  default_expr: z.string().nullable(),
  pk_index: z.coerce.number().nullable(),
  /** JSON, not a text array: a label may hold commas and quotes. Raw text on the shape server's pool, parsed elsewhere. */
  enum_labels: z.preprocess(
    (value) => (typeof value === 'string' ? JSON.parse(value) : value),
    z.array(z.string()).nullable()
  )
})

/** One column as the catalog describes it, with what both the shape server and the database page need. */
export interface CatalogColumn {
  name: string
  typeOid: number
  /** pg_type.typname. */
  type: string
  typtype: string
  typcategory: string
  elementType: string | null
  dims: number
  typmod: number
  notNull: boolean
  generated: boolean
  /** `format_type`: `character varying(40)`, `integer[]`… */
  displayType: string
  defaultExpr: string | null
  pkIndex: number | null
  enumLabels: string[] | null
}

export interface CatalogTable {
  oid: number
  schema: string
  name: string
  /** `oid::regclass`: the name quoted and qualified only where needed. */
  qualified: string
  columns: CatalogColumn[]
}

export type Queryable = Pick<pg.ClientBase, 'query'>

/** One table (null when no table or partitioned table of that name exists), or every table of the user schemas. */
export async function readCatalog(db: Queryable, table: { schema: string; name: string }): Promise<CatalogTable | null>
export async function readCatalog(db: Queryable, table: 'user-tables'): Promise<CatalogTable[]>
export async function readCatalog(
  db: Queryable,
  table: { schema: string; name: string } | 'user-tables'
): Promise<CatalogTable | null | CatalogTable[]> {
  const { rows } =
    table === 'user-tables' ? await db.query(USER_TABLES) : await db.query(ONE_TABLE, [table.schema, table.name])
  const tables = new Map<number, CatalogTable>()
  for (const raw of rows) {
    const row = catalogRowSchema.parse(raw)
    let entry = tables.get(row.table_oid)
    if (!entry) {
      entry = { oid: row.table_oid, schema: row.schema, name: row.table, qualified: row.qualified, columns: [] }
      tables.set(row.table_oid, entry)
    }
    if (row.name === null) continue
    entry.columns.push({
      name: row.name,
      typeOid: row.type_oid ?? 0,
      type: row.type ?? 'unknown',
      typtype: row.typtype ?? '',
      typcategory: row.typcategory ?? '',
      elementType: row.element_type,
      dims: row.dims ?? 0,
      typmod: row.typmod ?? -1,
      notNull: row.not_null ?? false,
      generated: row.generated ?? false,
      displayType: row.display_type ?? 'unknown',
      defaultExpr: row.default_expr,
      pkIndex: row.pk_index,
      enumLabels: row.enum_labels
    })
  }
  const list = [...tables.values()]
  return table === 'user-tables' ? list : (list[0] ?? null)
}
