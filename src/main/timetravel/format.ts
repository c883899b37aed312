import type {
  LogEntry,
  RowsAt,
  ShapeDefinition,
  ShapeDiff,
  TxidReport,
  VerifyReport
} from '../../shared/contract/timetravel'
import type { Row } from '../../shared/shape-client/messages'
import { describe } from './align'
import type { ReadLog } from './log'
import { describeOrigins } from '../../shared/timetravel-text'

/** `issues where id > 98000` */
export function shapeName(definition: ShapeDefinition): string {
  const params =
    Object.keys(definition.params).length > 0
      ? ` [${Object.values(definition.params)
          .map((value) => JSON.stringify(value))
          .join(', ')}]`
      : ''
  const where = definition.where ? ` where ${definition.where}${params}` : ''
  const columns = definition.columns ? ` (${definition.columns})` : ''
  const log = definition.log === 'changes_only' ? ', changes_only' : ''
  return `${definition.table}${columns}${where}${log}`
}

/** How a log was read, in one line. */
export function logLine(log: Pick<ReadLog, 'definition' | 'handle' | 'source' | 'end' | 'complete'>): string {
  const { kind, description } = log.source
  const read =
    kind === 'local-files'
      ? `the local server's files (${description})`
      : kind === 'http'
        ? `followed over HTTP (${description})`
        : description
  return `${shapeName(log.definition)}: handle ${log.handle ?? '?'}, ${read}, ${log.complete ? 'log ends' : 'read up to'} ${log.end}`
}

const compactRow = (row: Row): string => JSON.stringify(row)

export function formatRowsAt(log: ReadLog, at: RowsAt): string {
  const lines = [logLine(log), ...log.notes.map((note) => `note: ${note}`)]
  const last = at.last ? `, the last of them ${describe(at.last)}` : ''
  lines.push(
    `At ${at.offset}: ${at.rowCount} row(s), after ${at.count} of the log's ${log.records.length} messages${last}`
  )
  if (at.uncertain.length > 0)
    lines.push(
      `note: ${at.uncertain.length} message(s) without a position of their own (${at.uncertain
        .map((entry) => describe(entry))
        .slice(0, 3)
        .join(
          '; '
        )}) lie after ${at.uncertain[0]?.after} and at or before ${at.uncertain.at(-1)?.offset}: not applied here; the local server's files give exact positions`
    )
  for (const row of at.rows) {
    lines.push(`  ${row.key}  ${compactRow(row.value)}`)
    lines.push(
      `      made by: ${describeOrigins(row.origins)}${row.originCount > row.origins.length ? ` (${row.originCount - row.origins.length} more between)` : ''}`
    )
  }
  if (at.rows.length < at.rowCount) lines.push(`  … and ${at.rowCount - at.rows.length} more (--json for all)`)
  return `${lines.join('\n')}\n`
}

const messageRange = ({ fromCount, toCount }: ShapeDiff): string => {
  const [low, high] = fromCount <= toCount ? [fromCount, toCount] : [toCount, fromCount]
  return high === low ? 'no message between' : high === low + 1 ? `message #${low}` : `messages #${low}…#${high - 1}`
}

export function formatDiff(log: ReadLog, diff: ShapeDiff): string {
  const lines = [
    logLine(log),
    `From ${diff.from} to ${diff.to} (${messageRange(diff)}): ${diff.changeCount} row(s) changed`
  ]
  for (const change of diff.changes) {
    const sign = change.kind === 'added' ? '+' : change.kind === 'removed' ? '-' : '~'
    lines.push(`  ${sign} ${change.key}`)
    if (change.kind === 'changed')
      for (const column of change.columns)
        lines.push(
          `      ${column}: ${JSON.stringify(change.before?.[column] ?? null)} → ${JSON.stringify(change.after?.[column] ?? null)}`
        )
    else lines.push(`      ${compactRow((change.after ?? change.before) as Row)}`)
    lines.push(`      by: ${describeOrigins(change.messages)}`)
  }
  if (diff.changes.length < diff.changeCount)
    lines.push(`  … and ${diff.changeCount - diff.changes.length} more (--json for all)`)
  return `${lines.join('\n')}\n`
}

export function formatLog(log: ReadLog, entries: readonly LogEntry[]): string {
  const lines = [logLine(log), ...log.notes.map((note) => `note: ${note}`), `${log.records.length} message(s):`]
  for (const entry of entries)
    lines.push(`  #${entry.index}  ${entry.exact ? '' : '≤'}${entry.offset}  ${describe(entry).replace(/ at \S+/, '')}`)
  if (entries.length < log.records.length)
    lines.push(`  … and ${log.records.length - entries.length} more (--json for all)`)
  return `${lines.join('\n')}\n`
}

export function formatVerify(report: VerifyReport): string {
  const lines = [
    `Verify ${report.source.name} (${report.source.kind}) against Postgres (${report.postgres.kind === 'database' ? 'read' : "the bundle's rows, read"} ${report.postgres.readAt})`
  ]
  for (const shape of report.shapes) {
    lines.push('', `${shapeName(shape.definition)}  handle ${shape.handle ?? '?'}`)
    lines.push(`  client: ${shape.requests} request(s), ${shape.received} message(s), up to ${shape.lastOffset}`)
    lines.push(
      `  log:    ${shape.log.kind === 'none' ? `none (${shape.log.description})` : `${shape.log.kind}: ${shape.log.description}`}`
    )
    lines.push(
      `  rows:   client ${shape.counts.client}, Postgres ${shape.counts.postgres}${shape.counts.log === null ? '' : `, log at ${shape.lastOffset} ${shape.counts.log}`}`
    )
    for (const anomaly of shape.anomalies) lines.push(`  ✗ ${anomaly.kind}: ${anomaly.text}`)
    for (const row of shape.rows)
      lines.push(`  ${row.kind === 'changed-since' ? '·' : '✗'} ${row.kind} ${row.key}: ${row.cause}`)
    for (const note of shape.notes) lines.push(`  note: ${note}`)
    lines.push(
      `  → ${shape.verdict === 'equal' ? 'equal: the client holds what Postgres holds' : shape.verdict === 'changed-since' ? 'equal up to what changed after the recording' : 'DIVERGED'}`
    )
  }
  for (const note of report.notes) lines.push(`note: ${note}`)
  return `${lines.join('\n')}\n`
}

export function formatTxid(report: TxidReport): string {
  const full = report.xid8 && report.xid8 !== String(report.xid) ? ` (xid8 ${report.xid8})` : ''
  const lines = [
    `Transaction ${report.txid}: xid ${report.xid}${full}${report.postgres ? `, ${report.postgres.note}` : ''}`
  ]
  for (const shape of report.shapes) {
    const mark = shape.verdict === 'absent' ? '✗' : '✓'
    lines.push('', `${shapeName(shape.definition)}  handle ${shape.handle ?? '?'} (${shape.source.kind})`)
    lines.push(`  ${mark} ${shape.verdict}${shape.reason ? `: ${shape.reason}` : ''}`)
    for (const line of shape.explanation) lines.push(`    ${line}`)
  }
  lines.push('', report.verdict === 'delivered' ? 'Delivered.' : 'Not delivered to any of these shapes.')
  // what the tracer cannot know matters where it could not say where the id went
  if (report.shapes.some((shape) => shape.verdict === 'absent'))
    for (const limit of report.limits) lines.push(`limit: ${limit}`)
  return `${lines.join('\n')}\n`
}
