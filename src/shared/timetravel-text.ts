import type { RowOrigin } from './contract/timetravel'

/** "update at 2398_0 (title) txid 771": one message that made a row, as the CLI and the workbench name it. */
export function originText(origin: RowOrigin): string {
  const columns = origin.operation === 'update' ? ` (${origin.columns.join(', ')})` : ''
  const txids = origin.txids.length > 0 ? ` txid ${origin.txids.join(',')}` : ''
  return `${origin.operation} at ${origin.offset}${columns}${txids}`
}

/** "insert at 0_0, update at 2398_0 (title) txid 771". */
export const describeOrigins = (origins: readonly RowOrigin[]): string =>
  origins.map(originText).join(', ') || 'no message'
