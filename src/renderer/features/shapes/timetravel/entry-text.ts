import type { LogEntry } from '../../../../shared/contract/timetravel'

/** "update "public"."items"/"3"", "snapshot-end", "move-out". */
export function entryText(entry: LogEntry): string {
  if (entry.kind === 'change') return `${entry.moveIn ? 'move-in ' : ''}${entry.operation ?? ''} ${entry.key ?? ''}`
  return entry.name ?? entry.kind
}

/** A cell of a row as a table shows it. */
export const cellText = (value: unknown): string =>
  value === null || value === undefined ? 'NULL' : typeof value === 'string' ? value : JSON.stringify(value)
