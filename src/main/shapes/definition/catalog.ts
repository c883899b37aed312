import type pg from 'pg'
import { type ResolvedShape, definitionTables, resolveDefinition } from './definition'
import type { FilterCompiler } from './filter'
import { TableChecks } from './table-check'
import { type TableInfo, readTableInfo } from './table-info'

const DEFINITION_CACHE_SIZE = 2_000

export const tableKey = (schema: string, name: string): string => JSON.stringify([schema, name])

/**
 * What the shape server knows of the database's tables, and the definitions resolved against them. A table found
 * changed (dropped, recreated, other columns) is forgotten and reported to `tableChanged`, which takes the shapes
 * built on it out of service before the request that found it goes on (their files are removed later).
 */
export class Catalog {
  private readonly tables = new Map<string, TableInfo>()
  private readonly checks: TableChecks
  /** Resolved definitions by request input, oldest first. */
  private readonly definitions = new Map<string, ResolvedShape>()

  constructor(
    private readonly pool: pg.Pool,
    private readonly tableChanged: (schema: string, name: string) => void,
    /** Compiles wheres with subqueries (subquery/ plugs in here). */
    private readonly compileFilter: FilterCompiler
  ) {
    this.checks = new TableChecks(pool)
  }

  /**
   * Table metadata, checked against the catalog on every call (one small query shared by the calls that come
   * together): a table dropped, recreated or with changed columns invalidates the shapes built on it before any
   * request could be answered from them.
   */
  async tableInfo(schema: string, name: string): Promise<TableInfo> {
    const key = tableKey(schema, name)
    const cached = this.tables.get(key)
    const current = await this.checks.current(schema, name)
    if (cached && current?.oid === cached.oid && current.fingerprint === cached.fingerprint) return cached
    if (cached) this.changed(schema, name)
    const fresh = await readTableInfo(this.pool, schema, name)
    this.tables.set(key, fresh)
    return fresh
  }

  /** Resolves a request's shape; the compiled definition is reused while its table is unchanged. */
  async resolve(input: ResolvedShape['input']): Promise<ResolvedShape> {
    const key = JSON.stringify(input)
    const cached = this.definitions.get(key)
    if (cached) {
      const current = await Promise.all(
        definitionTables(cached).map(async (table) => (await this.tableInfo(table.schema, table.name)) === table)
      )
      if (current.every(Boolean)) return cached
    }
    const definition = await resolveDefinition(
      input,
      (schema, name) => this.tableInfo(schema, name),
      this.compileFilter
    )
    if (this.definitions.size >= DEFINITION_CACHE_SIZE)
      this.definitions.delete(this.definitions.keys().next().value as string)
    this.definitions.set(key, definition)
    return definition
  }

  /** The table changed (seen by replication): it is read again on its next use. */
  forget(schema: string, name: string): void {
    this.tables.delete(tableKey(schema, name))
  }

  private changed(schema: string, name: string): void {
    this.forget(schema, name)
    this.tableChanged(schema, name)
  }
}
