import { OFFSET_START } from '../protocol'

/** A log position `<tx>_<op>` (either part may be `inf`), or the request-only forms `-1` and `now`. */
export type Offset = string

/** Compares two parts of an offset exactly (LSNs exceed 2^53): decimal strings, or `inf` above every number. */
function comparePart(a: string, b: string): number {
  if (a === b) return 0
  if (a === 'inf' || b === 'inf') return a === 'inf' ? 1 : -1
  const x = BigInt(a)
  const y = BigInt(b)
  return x === y ? 0 : x > y ? 1 : -1
}

const partsOf = (offset: Offset): [string, string] => {
  if (offset === OFFSET_START) return [OFFSET_START, '0']
  const [tx = '0', op = '0'] = offset.split('_')
  return [tx, op]
}

/** Orders two log offsets: negative when a comes first. */
export function compareOffsets(a: Offset, b: Offset): number {
  const [aTx, aOp] = partsOf(a)
  const [bTx, bOp] = partsOf(b)
  return comparePart(aTx, bTx) || comparePart(aOp, bOp)
}

export const laterOffset = (a: Offset, b: Offset): Offset => (compareOffsets(a, b) >= 0 ? a : b)
