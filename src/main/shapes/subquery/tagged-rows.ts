import {
  InsertEncoder,
  type Row,
  type RowChange,
  type ShapeMessage,
  type TransactionContext,
  messagesFor,
  rowKey
} from '../storage/messages'
import { qualifiedName } from '../definition/row-sql'
import type { Shape } from '../storage/shape'
import { quoteIdent } from '../../sql'
import type { SubqueryPlan } from './plan'
import { type Overrides, type Views, keyValues, slotHash } from './views'

/** A position of the where that tests a dependency's values. */
export interface MovePosition {
  index: number
  lhs: string[]
  negated: boolean
}

/** A subset's where, order and page as SQL (the subset request, compiled). */
export interface SubsetSql {
  whereSql: string | null
  orderBySql: string | null
  limit: number | null
  offset: number | null
}

/**
 * How a subquery shape's rows become messages: their tags (one per disjunct) and active_conditions (each position's
 * truth with the shape's views), for rows read from Postgres (snapshot, subset, move-in) and for live changes.
 */
export class TaggedRows {
  private readonly encoder: InsertEncoder
  /** Every column read for a row: the encoder's, and those the where's atoms read. */
  readonly columns: string[]
  private readonly plan: SubqueryPlan

  constructor(
    private readonly shape: Shape,
    private readonly views: Views,
    private readonly stack: string
  ) {
    this.plan = views.plan
    this.encoder = new InsertEncoder(shape.definition)
    this.columns = [
      ...this.encoder.columns,
      ...this.plan.referenced.filter((name) => !this.encoder.columns.includes(name))
    ]
  }

  private get definition(): Shape['definition'] {
    return this.shape.definition
  }

  /** An insert line for a row read from Postgres (snapshot, subset or move-in), with its tags and active_conditions. */
  insertLine(
    values: ReadonlyArray<string | null>,
    columns: readonly string[],
    headers: Record<string, unknown>,
    conditions?: boolean[]
  ): string {
    const row: Record<string, string | null> = {}
    columns.forEach((name, index) => (row[name] = values[index] ?? null))
    const line = this.encoder.encode(values)
    const all = {
      operation: 'insert',
      relation: [this.definition.table.schema, this.definition.table.name],
      ...headers,
      ...this.tagHeaders(row, conditions)
    }
    return `{"headers":${JSON.stringify(all)},"key":${line.slice(this.encoder.prefix.length)}`
  }

  /**
   * A subset of this shape (its where ANDed with the subset's, ordered and paged): each row's active_conditions are
   * computed by Postgres in the subset's own snapshot, like its rows.
   */
  subsetQuery(subset: SubsetSql): {
    text: string
    line(values: ReadonlyArray<string | null>, headers: Record<string, unknown>): string
  } {
    const { columns } = this
    const conditions = this.plan.positions.map((position) => `coalesce(${position.sql}, false)`)
    let text = `SELECT ${[...columns.map(quoteIdent), ...conditions].join(', ')} FROM ${qualifiedName(this.definition.table)} WHERE ${this.plan.sql}`
    if (subset.whereSql) text += ` AND (${subset.whereSql})`
    if (subset.orderBySql) text += ` ORDER BY ${subset.orderBySql}`
    if (subset.limit !== null) text += ` LIMIT ${subset.limit}`
    if (subset.offset !== null) text += ` OFFSET ${subset.offset}`
    return {
      text,
      line: (values, headers) =>
        this.insertLine(
          values.slice(0, columns.length),
          columns,
          headers,
          values.slice(columns.length).map((value) => value === 't' || value === 'true')
        )
    }
  }

  /** The positions where a dependency's values are tested: their index in the where, left-hand columns and negation. */
  positionsOf(dependency: number): MovePosition[] {
    return this.plan.positions.flatMap((position, index) =>
      position.kind === 'sublink' && position.dependency === dependency
        ? [{ index, lhs: position.lhs, negated: position.negated }]
        : []
    )
  }

  /** A move-in or move-out event: the tags the moved values give at those positions, and the moving transaction. */
  moveEvent(
    event: 'move-in' | 'move-out',
    positions: readonly MovePosition[],
    values: readonly string[],
    xid: number
  ): string {
    const patterns = positions.flatMap((position) =>
      values.map((value) => ({
        pos: position.index,
        value: slotHash(this.stack, this.shape.handle, position.lhs, keyValues(value, position.lhs.length))
      }))
    )
    return JSON.stringify({ headers: { event, patterns, txids: [xid] } })
  }

  tags(row: Row): string[] {
    const { positions } = this.plan
    return this.plan.disjuncts.map((conjuncts) =>
      positions
        .map((position, index) => {
          if (!conjuncts.includes(index)) return ''
          if (position.kind === 'plain') return '1'
          return slotHash(
            this.stack,
            this.shape.handle,
            position.lhs,
            position.lhs.map((name) => row[name] ?? null)
          )
        })
        .join('/')
    )
  }

  private tagHeaders(
    row: Row,
    conditions = this.views.conditions(this.plan, row)
  ): { tags: string[]; active_conditions: boolean[] } {
    return { tags: this.tags(row), active_conditions: conditions }
  }

  /** A row change of the shape's table as messages, judged with the views before this transaction's moves. */
  convert(
    change: RowChange,
    context: TransactionContext,
    op: number,
    overrides: Overrides | undefined
  ): ShapeMessage[] {
    const { plan, views } = this
    const oldRow = change.kind === 'insert' ? null : change.old
    const newRow = change.kind === 'delete' ? null : change.new
    const oldConditions = oldRow && views.conditions(plan, oldRow, overrides)
    const newConditions = newRow && views.conditions(plan, newRow, overrides)
    const matches = {
      old: !!oldConditions && views.included(plan, oldConditions),
      new: !!newConditions && views.included(plan, newConditions)
    }
    const messages = messagesFor(this.definition, change, matches, context, op)
    const oldTags = oldRow ? this.tags(oldRow) : []
    const newTags = newRow ? this.tags(newRow) : []
    const removed = oldTags.filter((tag) => !newTags.includes(tag))
    if (
      messages.length === 0 &&
      matches.old &&
      matches.new &&
      oldRow &&
      newRow &&
      (removed.length > 0 || JSON.stringify(oldConditions) !== JSON.stringify(newConditions))
    ) {
      // no selected column changed, but what keeps the row in the shape did: the client needs the new tags
      const { table } = this.definition
      const value = Object.fromEntries(table.keyColumns.map((name) => [name, newRow[name] ?? null]))
      messages.push({
        op,
        message: {
          headers: {
            operation: 'update',
            relation: [table.schema, table.name],
            txids: [context.xid],
            lsn: context.lsn.toString(),
            op_position: op
          },
          key: rowKey(table, newRow),
          value
        }
      })
    }
    for (const { message } of messages) {
      const operation = message.headers.operation
      if (operation === 'insert') Object.assign(message.headers, { tags: newTags, active_conditions: newConditions })
      else if (operation === 'update')
        Object.assign(message.headers, { tags: newTags, removed_tags: removed, active_conditions: newConditions })
      else if (message.headers.key_change_to !== undefined)
        Object.assign(message.headers, { tags: [...newTags, ...removed], active_conditions: oldConditions })
      else Object.assign(message.headers, { tags: oldTags, active_conditions: oldConditions })
    }
    return messages
  }
}
