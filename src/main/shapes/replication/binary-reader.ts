/** Reads the big-endian fields of Postgres replication messages in order. */
export class BinaryReader {
  private offset = 0

  constructor(private readonly buffer: Buffer) {}

  byte(): number {
    const value = this.buffer.readUInt8(this.offset)
    this.offset += 1
    return value
  }

  int16(): number {
    const value = this.buffer.readInt16BE(this.offset)
    this.offset += 2
    return value
  }

  int32(): number {
    const value = this.buffer.readInt32BE(this.offset)
    this.offset += 4
    return value
  }

  uint32(): number {
    const value = this.buffer.readUInt32BE(this.offset)
    this.offset += 4
    return value
  }

  uint64(): bigint {
    const value = this.buffer.readBigUInt64BE(this.offset)
    this.offset += 8
    return value
  }

  /** A Postgres timestamp: microseconds since 2000-01-01 UTC. */
  timestamp(): Date {
    const micros = this.buffer.readBigInt64BE(this.offset)
    this.offset += 8
    return new Date(POSTGRES_EPOCH_MS + Number(micros / 1000n))
  }

  /** A NUL-terminated UTF-8 string. */
  cstring(): string {
    const end = this.buffer.indexOf(0, this.offset)
    if (end === -1) throw new Error('malformed replication message: unterminated string')
    const value = this.buffer.toString('utf8', this.offset, end)
    this.offset = end + 1
    return value
  }

  text(length: number): string {
    if (this.offset + length > this.buffer.length) throw new Error('malformed replication message: value past the end')
    const value = this.buffer.toString('utf8', this.offset, this.offset + length)
    this.offset += length
    return value
  }

  rest(): Buffer {
    const value = this.buffer.subarray(this.offset)
    this.offset = this.buffer.length
    return value
  }
}

export const POSTGRES_EPOCH_MS = Date.UTC(2000, 0, 1)
