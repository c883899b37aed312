import { BinaryReader } from './binary-reader'
import type { RelationColumn, RelationInfo } from './types'

/** Marks a column pgoutput left out because its TOASTed value did not change. */
export const UNCHANGED_TOAST = Symbol('unchanged TOAST value')
export type TupleValue = string | null | typeof UNCHANGED_TOAST
/** The old row: every column (REPLICA IDENTITY FULL), or only the key columns with NULL placeholders for the rest. */
export interface OldTuple {
  keyOnly: boolean
  values: TupleValue[]
}

/** The pgoutput protocol version 1 messages (https://www.postgresql.org/docs/current/protocol-logicalrep-message-formats.html). */
export type PgoutputMessage =
  | { tag: 'begin'; finalLsn: bigint; commitTime: Date; xid: number }
  | { tag: 'commit'; commitLsn: bigint; endLsn: bigint; commitTime: Date }
  | { tag: 'relation'; relation: RelationInfo }
  | { tag: 'insert'; relationOid: number; new: TupleValue[] }
  | { tag: 'update'; relationOid: number; old: OldTuple | null; new: TupleValue[] }
  | { tag: 'delete'; relationOid: number; old: OldTuple }
  | { tag: 'truncate'; relationOids: number[] }
  /** Origin and Type messages: nothing a consumer of text values needs. */
  | { tag: 'ignored' }

export function decodePgoutput(message: Buffer): PgoutputMessage {
  const reader = new BinaryReader(message)
  const tag = String.fromCharCode(reader.byte())
  switch (tag) {
    case 'B':
      return { tag: 'begin', finalLsn: reader.uint64(), commitTime: reader.timestamp(), xid: reader.uint32() }
    case 'C':
      reader.byte()
      return { tag: 'commit', commitLsn: reader.uint64(), endLsn: reader.uint64(), commitTime: reader.timestamp() }
    case 'R':
      return { tag: 'relation', relation: readRelation(reader) }
    case 'I':
      return { tag: 'insert', relationOid: reader.uint32(), new: readNewTuple(reader) }
    case 'U':
      return readUpdate(reader)
    case 'D': {
      const relationOid = reader.uint32()
      return { tag: 'delete', relationOid, old: readOldTuple(reader, reader.byte()) }
    }
    case 'T':
      return readTruncate(reader)
    case 'O':
    case 'Y':
      return { tag: 'ignored' }
    default:
      throw new Error(`unexpected pgoutput message ${JSON.stringify(tag)}`)
  }
}

function readRelation(reader: BinaryReader): RelationInfo {
  const oid = reader.uint32()
  const schema = reader.cstring()
  const table = reader.cstring()
  reader.byte() // replica identity setting
  const count = reader.int16()
  const columns: RelationColumn[] = []
  for (let index = 0; index < count; index++) {
    const flags = reader.byte()
    columns.push({
      name: reader.cstring(),
      typeOid: reader.uint32(),
      typeMod: reader.int32(),
      isKey: (flags & 1) === 1
    })
  }
  return { oid, schema: schema === '' ? 'pg_catalog' : schema, table, columns }
}

function readUpdate(reader: BinaryReader): PgoutputMessage {
  const relationOid = reader.uint32()
  let marker = reader.byte()
  let old: OldTuple | null = null
  if (marker !== NEW_TUPLE) {
    old = readOldTuple(reader, marker)
    marker = reader.byte()
  }
  if (marker !== NEW_TUPLE) throw new Error('malformed pgoutput Update: no new tuple')
  return { tag: 'update', relationOid, old, new: readTuple(reader) }
}

function readTruncate(reader: BinaryReader): PgoutputMessage {
  const count = reader.int32()
  reader.byte() // CASCADE / RESTART IDENTITY flags
  const relationOids: number[] = []
  for (let index = 0; index < count; index++) relationOids.push(reader.uint32())
  return { tag: 'truncate', relationOids }
}

const NEW_TUPLE = 'N'.charCodeAt(0)
const KEY_TUPLE = 'K'.charCodeAt(0)
const OLD_TUPLE = 'O'.charCodeAt(0)

function readOldTuple(reader: BinaryReader, marker: number): OldTuple {
  if (marker !== KEY_TUPLE && marker !== OLD_TUPLE) {
    throw new Error(`malformed pgoutput message: tuple marker ${JSON.stringify(String.fromCharCode(marker))}`)
  }
  return { keyOnly: marker === KEY_TUPLE, values: readTuple(reader) }
}

function readNewTuple(reader: BinaryReader): TupleValue[] {
  if (reader.byte() !== NEW_TUPLE) throw new Error('malformed pgoutput Insert: no new tuple')
  return readTuple(reader)
}

function readTuple(reader: BinaryReader): TupleValue[] {
  const count = reader.int16()
  const values: TupleValue[] = []
  for (let index = 0; index < count; index++) values.push(readTupleValue(reader))
  return values
}

function readTupleValue(reader: BinaryReader): TupleValue {
  const kind = String.fromCharCode(reader.byte())
  switch (kind) {
    case 'n':
      return null
    case 'u':
      return UNCHANGED_TOAST
    case 't':
      return reader.text(reader.int32())
    default:
      throw new Error(`unexpected pgoutput column kind ${JSON.stringify(kind)} (binary output is not requested)`)
  }
}
