import type { DoctorReport, TimelineEntry } from '../../shared/contract/doctor'
import { findingLines } from '../checker/format'

const short = (value: string | null) => (value === null ? '–' : value.length > 24 ? `${value.slice(0, 21)}…` : value)
const ms = (value: number | null) =>
  value === null ? '?' : value >= 1_000 ? `${(value / 1000).toFixed(1)} s` : `${value} ms`

function timelineLine(entry: TimelineEntry): string {
  const { request, response } = entry
  const asked = [
    `offset=${short(request.offset)}`,
    ...(request.handle ? [`handle=${short(request.handle)}`] : []),
    ...(request.cursor ? [`cursor=${request.cursor}`] : []),
    ...(request.live === 'off' ? [] : [request.live]),
    ...(request.cacheBuster ? ['cache-buster'] : [])
  ]
  const answer =
    entry.status === null
      ? `✗ ${entry.error ?? 'no response head by the end of the recording'}`
      : [
          `${entry.status}`,
          ...(response.handle ? [`handle=${short(response.handle)}`] : []),
          ...(response.offset ? [`offset=${short(response.offset)}`] : []),
          ...(response.cursor ? [`cursor=${response.cursor}`] : []),
          ...(response.changes > 0 ? [`${response.changes} change${response.changes === 1 ? '' : 's'}`] : []),
          ...(response.upToDate ? ['up-to-date'] : []),
          ...(response.mustRefetch ? ['must-refetch'] : [])
        ].join(' ')
  const cache =
    entry.cache.status === 'unknown'
      ? ''
      : `  [${entry.cache.status}${entry.cache.evidence ? `: ${entry.cache.evidence}` : ''}]`
  return `#${String(entry.n).padEnd(3)} +${(entry.atMs / 1000).toFixed(1).padStart(6)} s  ${entry.method} ${asked.join(' ')}  →  ${answer}  (${ms(entry.endMs)})${cache}`
}

/** The doctor's report as a person reads it in a terminal: the timeline, then the diagnoses with their evidence. */
export function formatDoctorReport(report: DoctorReport): string {
  const errors = report.findings.filter((finding) => finding.severity === 'error').length
  const lines = [
    `Sync doctor: ${report.source.name} (${report.source.kind === 'har' ? 'HAR' : 'Syncscope recording'}${report.source.creator ? ` from ${report.source.creator}` : ''})`,
    `${report.timeline.length} shape requests${report.ignored > 0 ? `, ${report.ignored} other requests left out` : ''}`,
    '',
    'Timeline',
    ...report.timeline.map(timelineLine),
    ''
  ]
  if (report.findings.length === 0) lines.push('No problem found.')
  else {
    lines.push(`Diagnoses (${errors} errors, ${report.findings.length - errors} warnings)`)
    for (const finding of report.findings) lines.push(...findingLines(finding), '')
  }
  if (report.notes.length > 0) lines.push('', 'Notes', ...report.notes.map((note) => `- ${note}`))
  return `${lines.join('\n')}\n`
}
