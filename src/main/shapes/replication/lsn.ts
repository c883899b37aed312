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
