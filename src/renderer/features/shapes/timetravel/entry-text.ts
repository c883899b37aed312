import type { LogEntry, RowOrigin } from '../../../../shared/contract/timetravel'

/** "update "public"."items"/"3"", "snapshot-end", "move-out". */
export function entryText(entry: LogEntry): string {
  if (entry.kind === 'change') return `${entry.moveIn ? 'move-in ' : ''}${entry.operation ?? ''} ${entry.key ?? ''}`
  return entry.name ?? entry.kind
}

/** "update at 2398_0 (title) txid 771". */
export function originText(origin: RowOrigin): string {
  const columns = origin.operation === 'update' ? ` (${origin.columns.join(', ')})` : ''
  const txids = origin.txids.length > 0 ? ` txid ${origin.txids.join(',')}` : ''
  return `${origin.operation} at ${origin.offset}${columns}${txids}`
}

/** A cell of a row as a table shows it. */
export const cellText = (value: unknown): string =>
  value === null || value === undefined ? 'NULL' : typeof value === 'string' ? value : JSON.stringify(value)
