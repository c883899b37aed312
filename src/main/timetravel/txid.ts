import type { LogEntry, TxidReason, TxidReport, TxidShape } from '../../shared/contract/timetravel'
import { CONTROL } from '../../shared/protocol'
import { isControlMessage } from '../../shared/shape-client/messages'
import { type XidSnapshot, widenXid } from '../../shared/xid-snapshot'
import { describe } from './align'
import { TimeTravelInputError, entryOf, type ReadLog } from './log'
import { readOnly } from './postgres'
import { type ShapeEvidence, type TxidEvidence, type WrittenRow, txidEvidence } from './txid-evidence'

const MAX_TXID = 2n ** 64n - 1n
/** Messages named at most in an explanation. */
const NAMED = 5

const LIMITS = [
  "A row's xmin names only the last transaction that wrote it: rows a transaction deleted, or that were written again since, leave no trace of it in Postgres.",
  'Whether a transaction wrote nothing at all cannot be read from Postgres without its WAL: "taken outside its transaction" is inferred from a committed id that left no row in the shape\'s tables while a neighbouring transaction did.',
  'pg_xact_status is unknown (null) for transactions older than the commit log Postgres keeps.'
]

export function parseTxid(text: string): bigint {
  if (!/^\d{1,20}$/.test(text))
    throw new TimeTravelInputError(
      `${JSON.stringify(text.slice(0, 40))} is not a transaction id: a whole number, as pg_current_xact_id() returns it`
    )
  const txid = BigInt(text)
  if (txid > MAX_TXID || txid < 3n)
    throw new TimeTravelInputError(`${text} is not a transaction id Postgres gives (3 … 2^64-1)`)
  return txid
}

interface SnapshotEnd {
  entry: LogEntry
  xmin: string
  xmax: string
  xipList: string[]
}

function snapshotEnds(log: ReadLog): SnapshotEnd[] {
  return log.records.flatMap((record, index) => {
    const { message } = record
    if (!isControlMessage(message) || message.headers.control !== CONTROL.snapshotEnd) return []
    const { xmin, xmax, xip_list: xip } = message.headers as { xmin?: unknown; xmax?: unknown; xip_list?: unknown }
    if (typeof xmin !== 'string' || typeof xmax !== 'string' || !/^\d+$/.test(xmin) || !/^\d+$/.test(xmax)) return []
    const xipList = Array.isArray(xip)
      ? xip.filter((item): item is string => typeof item === 'string' && /^\d+$/.test(item))
      : []
    return [{ entry: entryOf(record, index), xmin, xmax, xipList }]
  })
}

/** Whether a snapshot saw the transaction committed (the id widened near the snapshot when only its 32 bits are known). */
function sees(snapshot: SnapshotEnd, txid: bigint): boolean {
  const visibility: XidSnapshot = {
    xmin: BigInt(snapshot.xmin),
    xmax: BigInt(snapshot.xmax),
    xip: new Set(snapshot.xipList.map(BigInt))
  }
  const full = txid >= 2n ** 32n ? txid : widenXid(Number(txid), visibility.xmax)
  return full < visibility.xmin || (full < visibility.xmax && !visibility.xip.has(full))
}

const rowList = (rows: readonly WrittenRow[]): string =>
  rows
    .slice(0, NAMED)
    .map((row) => row.key)
    .join(', ') + (rows.length > NAMED ? ` and ${rows.length - NAMED} more` : '')

/** Why a shape has no message carrying the transaction, from the log and what Postgres told. */
function whyAbsent(
  log: ReadLog,
  txid: bigint,
  xid: number,
  initial: SnapshotEnd | null,
  evidence: { status: TxidEvidence['status']; shape: ShapeEvidence } | null
): { reason: TxidReason; explanation: string[] } {
  const compacted = log.url !== null && /[?&]experimental_compaction=(true|1)\b/.test(log.url)
  if (log.definition.log === 'changes_only' && initial && sees(initial, txid))
    return {
      reason: 'changes-only-started-after',
      explanation: [
        `the shape is changes_only and started after transaction ${txid} committed (its snapshot at ${initial.entry.offset}, xmin ${initial.xmin} xmax ${initial.xmax}, already sees it): such a shape sends no rows for what happened before it; a subset snapshot (requestSnapshot) would bring them`
      ]
    }
  if (!evidence) {
    const explanation = [
      'no message carries it and no snapshot of the log covers it; give the database (--database URL) to tell why'
    ]
    return compacted
      ? {
          reason: 'compacted',
          explanation: [
            ...explanation,
            'the shape is compacted (experimental_compaction): a message of it may have been merged into a later one'
          ]
        }
      : { reason: 'unknown', explanation }
  }
  const { status, shape } = evidence
  if (status === 'aborted')
    return {
      reason: 'aborted',
      explanation: [`transaction ${txid} rolled back (pg_xact_status: aborted): its write never happened`]
    }
  if (status === 'in progress')
    return {
      reason: 'in-progress',
      explanation: [
        `transaction ${txid} has not committed yet (pg_xact_status: in progress): nothing of it can be synced before it does`
      ]
    }
  if (shape.problem) return { reason: 'unknown', explanation: [shape.problem] }
  const own = shape.written.filter((row) => row.inShape !== null)
  const inShape = own.filter((row) => row.inShape === true)
  if (own.length > 0 && inShape.length === 0)
    return {
      reason: 'where',
      explanation: [
        `the write did not match the where: transaction ${txid} wrote ${rowList(own)}, which the shape's where${log.definition.where ? ` (${log.definition.where})` : ''} does not hold`
      ]
    }
  if (compacted)
    return {
      reason: 'compacted',
      explanation: [
        `the shape is compacted (experimental_compaction): the message of transaction ${txid} may have been merged into a later one, which carries only its own txid`
      ]
    }
  if (inShape.length > 0)
    return {
      reason: 'not-delivered',
      explanation: [
        `transaction ${txid} wrote ${rowList(inShape)}, which the where holds, yet no message of the log (to ${log.end}) carries it: the server has not delivered it (yet), or lost it`
      ]
    }
  const inner = shape.written.filter((row) => row.inShape === null)
  if (inner.length > 0)
    return {
      reason: 'where',
      explanation: [
        `transaction ${txid} wrote ${rowList(inner)} in a subquery's table without moving any row in or out of the shape (no move-in or move-out event carries it)`
      ]
    }
  const nearby = log.records.flatMap((record, index) => {
    const other = entryOf(record, index).txids.find((id) => id !== xid && Math.abs(id - xid) <= 20)
    return other === undefined ? [] : [{ entry: entryOf(record, index), xid: other }]
  })
  const rowsNearby = shape.neighbours.filter((row) => row.inShape !== false)
  if (status === 'committed' && (nearby.length > 0 || rowsNearby.length > 0)) {
    // the nearest; between two as near, the later (an id taken before the write is the usual slip)
    const closest = nearby.sort((a, b) => Math.abs(a.xid - xid) - Math.abs(b.xid - xid) || b.xid - a.xid)[0]
    const evidenceLine = closest
      ? `transaction ${closest.xid}, a moment ${closest.xid > xid ? 'later' : 'earlier'}, did: ${describe(closest.entry)}`
      : `transaction ${rowsNearby[0]?.xid} did: it wrote ${rowList(rowsNearby.filter((row) => row.xid === rowsNearby[0]?.xid))}`
    return {
      reason: 'outside-transaction',
      explanation: [
        `the id was probably taken outside the write's transaction: transaction ${txid} committed without leaving any row in ${log.definition.table}, while ${evidenceLine}; call pg_current_xact_id() in the transaction that writes`
      ]
    }
  }
  return {
    reason: 'unknown',
    explanation: [
      `transaction ${txid} (pg_xact_status: ${status ?? 'unknown, too old'}) left no row in the shape's tables: it wrote other tables, deleted rows, wrote rows written again since, or nothing at all`
    ]
  }
}

function traceShape(
  log: ReadLog,
  txid: bigint,
  evidence: { status: TxidEvidence['status']; shape: ShapeEvidence } | null
): TxidShape {
  const xid = Number(txid & 0xffffffffn)
  const carriers = log.records.flatMap((record, index) =>
    entryOf(record, index).txids.includes(xid) ? [entryOf(record, index)] : []
  )
  const ends = snapshotEnds(log)
  const initial = ends.find((end) => end.entry.offset.startsWith('0_')) ?? null
  const base = { url: log.url, definition: log.definition, handle: log.handle, source: log.source }
  if (carriers.length > 0)
    return {
      ...base,
      verdict: 'carried',
      carriers,
      cover: null,
      reason: null,
      explanation: [
        `${carriers.length} message(s) carry it in txids: ${carriers.slice(0, NAMED).map(describe).join('; ')}${carriers.length > NAMED ? '…' : ''}`
      ]
    }
  const cover = ends.find((end) => sees(end, txid))
  if (cover && !(log.definition.log === 'changes_only' && cover === initial))
    return {
      ...base,
      verdict: 'covered',
      carriers,
      cover: {
        entry: cover.entry,
        xmin: cover.xmin,
        xmax: cover.xmax,
        xipList: cover.xipList,
        initial: cover === initial
      },
      reason: null,
      explanation: [
        `the ${cover === initial ? "shape's snapshot" : 'move-in query'} ending at ${cover.entry.offset} (xmin ${cover.xmin}, xmax ${cover.xmax}, xip_list [${cover.xipList.join(', ')}]) already sees it committed: its effect is in the rows before that snapshot-end, and a client waiting for it (awaitTxId) is released by it`
      ]
    }
  const { reason, explanation } = whyAbsent(log, txid, xid, initial, evidence)
  return { ...base, verdict: 'absent', carriers, cover: null, reason, explanation }
}

/**
 * Where a transaction went in these shapes' logs: the messages carrying it in `txids`, or the snapshot that already
 * covers it; when none does, why — from the logs and, given the database, from Postgres.
 */
export async function traceTxid(
  text: string,
  logs: readonly ReadLog[],
  databaseUrl: string | null
): Promise<TxidReport> {
  const txid = parseTxid(text)
  const xid = Number(txid & 0xffffffffn)
  const evidence = databaseUrl
    ? await readOnly(databaseUrl, (client) =>
        txidEvidence(
          client,
          txid,
          logs.map((log) => log.definition)
        )
      )
    : null
  const shapes = logs.map((log, index) =>
    traceShape(
      log,
      evidence?.xid8 ?? txid,
      evidence && { status: evidence.status, shape: evidence.shapes[index] as ShapeEvidence }
    )
  )
  const limits = evidence
    ? [...LIMITS]
    : ['Without the database (--database URL) only the logs were read: why an id is absent cannot be told.']
  if (txid >= 2n ** 32n)
    limits.unshift(
      `Messages carry the 32-bit id (${xid}); awaitTxId compares the number it is given with it: pass pg_current_xact_id()::xid, not the full xid8 ${txid}.`
    )
  return {
    txid: text,
    xid,
    xid8: evidence ? evidence.xid8.toString() : txid >= 2n ** 32n ? txid.toString() : null,
    postgres: evidence && {
      status: evidence.status,
      note:
        evidence.status === null
          ? 'Postgres no longer knows its status (older than its commit log keeps)'
          : `pg_xact_status: ${evidence.status}`
    },
    shapes,
    verdict: shapes.some((shape) => shape.verdict !== 'absent') ? 'delivered' : 'absent',
    limits
  }
}
