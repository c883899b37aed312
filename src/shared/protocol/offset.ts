/**
 * Offsets as the protocol spells them: a log position `<tx>_<op>` (op may be `inf`: after all of transaction tx; tx 0
 * is the snapshot region), or the request-only forms `-1` (from the start) and `now` (from the current end).
 */

export const OFFSET_START = '-1'
export const OFFSET_NOW = 'now'

export interface LogOffset {
  tx: bigint
  op: number
}

export type RequestedOffset = { kind: 'start' } | { kind: 'now' } | { kind: 'at'; offset: LogOffset }

const OFFSET_FORM = /^(\d+)_(\d+|inf)$/

/** `-1`, `now`, `<int>_<int>` or `<int>_inf`; null when malformed. `-1_0` is accepted as `-1`, as the reference does. */
export function parseOffset(text: string): RequestedOffset | null {
  if (text === OFFSET_START || text === '-1_0') return { kind: 'start' }
  if (text === OFFSET_NOW) return { kind: 'now' }
  const match = OFFSET_FORM.exec(text)
  if (!match?.[1] || !match[2]) return null
  const tx = BigInt(match[1])
  if (tx >= 2n ** 64n) return null
  const op = match[2] === 'inf' ? Infinity : Number(match[2])
  if (!Number.isSafeInteger(op) && op !== Infinity) return null
  return { kind: 'at', offset: { tx, op } }
}

export function formatOffset(offset: LogOffset): string {
  return `${offset.tx}_${offset.op === Infinity ? 'inf' : offset.op}`
}

/** The offset a live client resumes from after an up-to-date carrying `global_last_seen_lsn`. */
export const offsetAfterLsn = (lsn: string): string => `${lsn}_0`

const LSN_TEXT = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/

/** Postgres's `X/Y` LSN text as an unsigned 64-bit number. */
export function parseLsn(text: string): bigint {
  const match = LSN_TEXT.exec(text)
  if (!match) throw new Error(`not an LSN: ${JSON.stringify(text)}`)
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`)
}

export function formatLsn(lsn: bigint): string {
  return `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xffffffffn).toString(16).toUpperCase()}`
}
