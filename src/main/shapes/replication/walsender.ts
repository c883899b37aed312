import { BinaryReader, POSTGRES_EPOCH_MS } from './binary-reader'

/** What the walsender sends inside CopyData during START_REPLICATION (protocol "Streaming Replication Protocol"). */
export type WalSenderMessage =
  /** `walEnd`: for logical replication, the position of the record the payload came from (a Commit's: the end of the transaction). */
  | { tag: 'xlogData'; walEnd: bigint; payload: Buffer }
  /** `walEnd`: the position the walsender has sent up to. */
  | { tag: 'keepalive'; walEnd: bigint; replyRequested: boolean }

export function decodeWalSenderMessage(chunk: Buffer): WalSenderMessage {
  const reader = new BinaryReader(chunk)
  const tag = String.fromCharCode(reader.byte())
  if (tag === 'w') {
    reader.uint64() // start of the data
    const walEnd = reader.uint64()
    reader.uint64() // send time
    return { tag: 'xlogData', walEnd, payload: reader.rest() }
  }
  if (tag === 'k') {
    const walEnd = reader.uint64()
    reader.uint64() // send time
    return { tag: 'keepalive', walEnd, replyRequested: reader.byte() === 1 }
  }
  throw new Error(`unexpected replication message ${JSON.stringify(tag)}`)
}

/** Standby status update: everything up to `lsn` is written, flushed and applied by this consumer. */
export function standbyStatusUpdate(lsn: bigint, now = Date.now()): Buffer {
  const message = Buffer.alloc(34)
  message.write('r', 0, 'latin1')
  message.writeBigUInt64BE(lsn, 1)
  message.writeBigUInt64BE(lsn, 9)
  message.writeBigUInt64BE(lsn, 17)
  message.writeBigInt64BE(BigInt(now - POSTGRES_EPOCH_MS) * 1000n, 25)
  message.writeUInt8(0, 33)
  return message
}
