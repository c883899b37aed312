import type { CheckResult, ConformanceReport } from '../../shared/contract/checker'
import type { Evidence, Finding } from '../../shared/findings'

const SHOWN_HEADERS =
  /^(cache-control|content-type|content-encoding|etag|date|vary|age|x-cache.*|cf-cache-status|access-control-allow-origin|access-control-expose-headers|(service|electric)-(handle|offset|cursor|up-to-date))$/

const STATUS_WORD: Record<CheckResult['status'], string> = {
  pass: 'PASS',
  fail: 'FAIL',
  warn: 'WARN',
  skip: 'SKIP',
  error: 'ERROR'
}

function evidenceLines(evidence: Evidence): string[] {
  const lines = [`> ${evidence.request.method} ${evidence.request.url}   (${evidence.label})`]
  for (const [name, value] of evidence.request.headers) lines.push(`> ${name}: ${value}`)
  if (evidence.request.body !== undefined) lines.push(`> ${evidence.request.body}`)
  const { response } = evidence
  if (response) {
    lines.push(
      `< ${response.status}   (head after ${response.headMs} ms${response.endMs === null ? ', still open' : `, end after ${response.endMs} ms`})`
    )
    for (const [name, value] of response.headers) if (SHOWN_HEADERS.test(name)) lines.push(`< ${name}: ${value}`)
    if (evidence.frames)
      for (const frame of evidence.frames.slice(0, 6))
        lines.push(`< [${frame.atMs} ms] ${frame.raw.slice(0, 120).replaceAll('\n', '\\n')}`)
    else if (response.body)
      lines.push(
        `< ${response.body.slice(0, 200).replaceAll('\n', '\\n')}${response.body.length > 200 || response.truncated ? '…' : ''}`
      )
  }
  if (evidence.error) lines.push(`! ${evidence.error}`)
  return lines
}

export function findingLines(finding: Finding): string[] {
  return [
    `${finding.severity === 'error' ? '✗' : '!'} ${finding.id} (${finding.severity}): ${finding.message}`,
    `  rule: ${finding.rule.text} (${finding.rule.doc})`,
    ...(finding.fix ? [`  fix:  ${finding.fix}`] : []),
    ...finding.evidence.flatMap(evidenceLines).map((line) => `    ${line}`)
  ]
}

/** `13 checks: 11 passed, 1 failed, 1 could not finish, 0 with warnings, 0 skipped` (the errors only when there are). */
export function summaryLine(report: ConformanceReport): string {
  const { pass, fail, warn, skip, error } = report.summary
  const errors = error > 0 ? `, ${error} could not finish` : ''
  return `${report.checks.length} checks: ${pass} passed, ${fail} failed${errors}, ${warn} with warnings, ${skip} skipped`
}

/** The report as a person reads it in a terminal. */
export function formatReport(report: ConformanceReport): string {
  const width = Math.max(...report.checks.map((check) => check.id.length))
  const lines = [
    `Conformance of ${report.url} (header brand ${report.headerBrand}${report.writeTable ? `, live changes in ${report.writeTable}` : ''})`,
    ''
  ]
  for (const check of report.checks) {
    const note = check.reason ? ` — ${check.reason}` : ''
    lines.push(
      `${STATUS_WORD[check.status].padEnd(4)}  ${check.id.padEnd(width)}  ${check.title}${note}  (${(check.ms / 1000).toFixed(1)} s)`
    )
    for (const finding of check.findings) lines.push(...findingLines(finding).map((line) => `      ${line}`))
  }
  lines.push('', `${summaryLine(report)} in ${(report.ms / 1000).toFixed(1)} s`)
  return `${lines.join('\n')}\n`
}

const xml = (text: string) =>
  text.replace(/[<>&"']/g, (char) => `&#${char.charCodeAt(0)};`).replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD]/gu, '')

/**
 * JUnit XML for CI: one test case per check; error findings are failures, a check that could not finish an error,
 * warnings go to system-out, skips say why.
 */
export function formatJunit(report: ConformanceReport): string {
  const cases = report.checks.map((check) => {
    const head = `  <testcase classname="syncscope.check" name="${xml(`${check.id}: ${check.title}`)}" time="${(check.ms / 1000).toFixed(3)}">`
    const details = xml(check.findings.flatMap(findingLines).join('\n'))
    const errors = check.findings.filter((finding) => finding.severity === 'error')
    const body =
      check.status === 'skip'
        ? `    <skipped message="${xml(check.reason ?? '')}"/>`
        : check.status === 'error'
          ? `    <error message="${xml(check.reason ?? '')}" type="check-error">${details}</error>`
          : check.status === 'fail'
            ? `    <failure message="${xml(errors.map((finding) => finding.id).join(', '))}" type="${xml(errors[0]?.id ?? 'fail')}">${details}</failure>`
            : check.findings.length > 0
              ? `    <system-out>${details}</system-out>`
              : ''
    return body ? `${head}\n${body}\n  </testcase>` : `${head}</testcase>`
  })
  const { fail, skip, error } = report.summary
  return `<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="${xml(`syncscope check ${report.url}`)}" tests="${report.checks.length}" failures="${fail}" errors="${error}" skipped="${skip}" time="${(report.ms / 1000).toFixed(3)}" timestamp="${report.startedAt}">
${cases.join('\n')}
</testsuite>
`
}
