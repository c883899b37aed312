import { UNCHANGED_TOAST, type OldTuple, type PgoutputMessage, type TupleValue } from './pgoutput'
import type { RelationInfo, ReplicatedChange, ReplicatedTransaction, Row } from './types'

export interface CommittedTransaction {
  transaction: ReplicatedTransaction
  /** End of the commit record: what the slot may be confirmed up to once the transaction is applied. */
  endLsn: bigint
}

/**
 * Builds whole transactions from the pgoutput messages of one replication session.
 * Relation messages are per session, so a new session needs a new assembler.
 */
export class TransactionAssembler {
  private readonly relations = new Map<number, RelationInfo>()
  private open: ReplicatedTransaction | null = null

  /** True between a Begin and its Commit. */
  get inTransaction(): boolean {
    return this.open !== null
  }

  /** Returns the transaction when `message` commits it. */
  push(message: PgoutputMessage): CommittedTransaction | null {
    switch (message.tag) {
      case 'begin':
        if (this.open) throw new Error('pgoutput Begin inside an open transaction')
        this.open = { xid: message.xid, commitLsn: message.finalLsn, commitTime: message.commitTime, changes: [] }
        return null
      case 'commit':
        return this.commit(message.endLsn)
      case 'relation':
        this.relations.set(message.relation.oid, message.relation)
        this.record({ kind: 'relation', relation: message.relation })
        return null
      case 'ignored':
        return null
      default:
        this.record(this.change(message))
        return null
    }
  }

  private commit(endLsn: bigint): CommittedTransaction {
    const transaction = this.open
    if (!transaction) throw new Error('pgoutput Commit without Begin')
    this.open = null
    return { transaction, endLsn }
  }

  private record(change: ReplicatedChange): void {
    if (!this.open) throw new Error(`pgoutput ${change.kind} outside a transaction`)
    this.open.changes.push(change)
  }

  private change(
    message: Exclude<PgoutputMessage, { tag: 'begin' | 'commit' | 'relation' | 'ignored' }>
  ): ReplicatedChange {
    switch (message.tag) {
      case 'insert': {
        const relation = this.relation(message.relationOid)
        return { kind: 'insert', relation, new: toRow(relation, message.new, {}) }
      }
      case 'update': {
        const relation = this.relation(message.relationOid)
        const old = message.old ? oldRow(relation, message.old) : {}
        return { kind: 'update', relation, old, new: toRow(relation, message.new, old) }
      }
      case 'delete': {
        const relation = this.relation(message.relationOid)
        return { kind: 'delete', relation, old: oldRow(relation, message.old) }
      }
      case 'truncate':
        return { kind: 'truncate', relations: message.relationOids.map((oid) => this.relation(oid)) }
    }
  }

  private relation(oid: number): RelationInfo {
    const relation = this.relations.get(oid)
    if (!relation) throw new Error(`pgoutput change for relation ${oid} before its Relation message`)
    return relation
  }
}

/** A key tuple's NULL placeholders for the non-key columns are left out. */
function oldRow(relation: RelationInfo, old: OldTuple): Row {
  return toRow(relation, old.values, {}, (index) => !old.keyOnly || relation.columns[index]?.isKey === true)
}

function toRow(
  relation: RelationInfo,
  values: TupleValue[],
  unchangedFrom: Row,
  present = (_index: number) => true
): Row {
  const row: Row = {}
  relation.columns.forEach((column, index) => {
    const value = values[index]
    if (!present(index)) return
    if (value === UNCHANGED_TOAST) {
      if (Object.hasOwn(unchangedFrom, column.name)) row[column.name] = unchangedFrom[column.name] ?? null
    } else if (value !== undefined) {
      row[column.name] = value
    }
  })
  return row
}
