import { crc32 } from 'node:zlib'

/** An index record: tx (u64), op (u32), end position of the entry's line in the log (u64), checksum (u32). */
export const RECORD_BYTES = 24
/** The bytes of a record its checksum covers (all but the checksum). */
export const CHECKED_BYTES = 20
/** Bytes of the log read at a time while it is verified. */
export const VERIFY_BLOCK_BYTES = 1024 * 1024

/** CRC-32 of an index record's first 20 bytes followed by the entry's line (newline included). */
export const entryChecksum = (head: Buffer, line: Buffer): number => crc32(line, crc32(head))
