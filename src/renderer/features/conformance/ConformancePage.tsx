import { useCallback, useState, type FormEvent } from 'react'
import type { CheckResult, ConformanceReport } from '../../../shared/contract/checker'
import type { Evidence, Finding } from '../../../shared/findings'
import type { HeaderBrand } from '../../../shared/protocol'
import { ErrorBox } from '../../components/ErrorBox'
import { useCall, useCallMutation, useEvent } from '../../hooks'
import './conformance.css'

const STATUS_CLASS: Record<CheckResult['status'], string> = {
  pass: 'ok',
  fail: 'error',
  warn: 'warn',
  skip: '',
  error: 'error'
}

/** `K: V` (or `k=v`) lines → a record; blank lines ignored. */
function pairs(text: string, separator: ':' | '='): Record<string, string> {
  const entries = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.includes(separator))
    .map(
      (line) => [line.slice(0, line.indexOf(separator)).trim(), line.slice(line.indexOf(separator) + 1).trim()] as const
    )
  return Object.fromEntries(entries.filter(([name]) => name !== ''))
}

function EvidenceView({ evidence }: { evidence: Evidence }) {
  const { request, response } = evidence
  return (
    <div className="evidence">
      <h5>{evidence.label}</h5>
      <pre>
        {`> ${request.method} ${request.url}\n`}
        {request.headers.map(([name, value]) => `> ${name}: ${value}\n`).join('')}
        {request.body !== undefined ? `> ${request.body}\n` : ''}
        {response
          ? `< ${response.status}  (head ${response.headMs} ms${response.endMs === null ? ', still open' : `, end ${response.endMs} ms`})\n${response.headers.map(([name, value]) => `< ${name}: ${value}\n`).join('')}`
          : ''}
        {evidence.frames
          ? evidence.frames.map((frame) => `< [${frame.atMs} ms] ${frame.raw}\n`).join('')
          : response?.body
            ? `< ${response.body.slice(0, 1_000)}${response.truncated || response.body.length > 1_000 ? '…' : ''}\n`
            : ''}
        {evidence.error ? `! ${evidence.error}\n` : ''}
      </pre>
    </div>
  )
}

export function FindingView({ finding }: { finding: Finding }) {
  return (
    <details
      className={`finding ${finding.severity}`}
      data-testid={`finding-${finding.id}`}
      open={finding.severity === 'error'}
    >
      <summary>
        <code>{finding.id}</code>{' '}
        <span className={`badge ${finding.severity === 'error' ? 'error' : 'warn'}`}>{finding.severity}</span>{' '}
        {finding.message}
      </summary>
      <p>
        <strong>Rule:</strong> {finding.rule.text} <code>{finding.rule.doc}</code>
      </p>
      {finding.fix && (
        <p className="fix">
          <strong>Fix:</strong> {finding.fix}
        </p>
      )}
      {finding.evidence.map((evidence, index) => (
        <EvidenceView key={index} evidence={evidence} />
      ))}
    </details>
  )
}

function ReportView({ report }: { report: ConformanceReport }) {
  const { pass, fail, warn, skip, error } = report.summary
  return (
    <section className="panel" aria-label="Conformance report">
      <p data-testid="conformance-summary">
        <code>{report.url}</code> · <code>{report.headerBrand}-*</code> · {report.checks.length} checks: {pass} passed,{' '}
        {fail} failed{error > 0 ? `, ${error} could not finish` : ''}, {warn} with warnings, {skip} skipped in{' '}
        {(report.ms / 1000).toFixed(1)} s{report.writeTable ? ` · live changes in ${report.writeTable} (dropped)` : ''}
      </p>
      <table className="grid checks">
        <tbody>
          {report.checks.map((check) => (
            <tr key={check.id} data-testid={`check-${check.id}`}>
              <td>
                <span className={`badge ${STATUS_CLASS[check.status]}`} data-testid="status">
                  {check.status}
                </span>
              </td>
              <td>
                <code>{check.id}</code>
              </td>
              <td>
                {check.title}
                {check.reason && <div className="muted">{check.reason}</div>}
                {check.findings.map((finding) => (
                  <FindingView key={finding.id} finding={finding} />
                ))}
              </td>
              <td className="timing">{(check.ms / 1000).toFixed(1)} s</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  )
}

/** Runs `syncscope check` against this app or any shape endpoint and shows the report. */
export function ConformancePage() {
  const defaults = useCall('checker.defaults', {})
  const run = useCallMutation('checker.run')
  const [target, setTarget] = useState<'app' | 'other'>('app')
  const [url, setUrl] = useState('')
  const [brand, setBrand] = useState<'' | HeaderBrand>('')
  const [table, setTable] = useState<string | null>(null)
  const [writes, setWrites] = useState(true)
  const [headers, setHeaders] = useState('')
  const [params, setParams] = useState('')
  const [maxWait, setMaxWait] = useState(30)
  const [progress, setProgress] = useState<CheckResult[]>([])
  useEvent(
    'checker.progress',
    useCallback(({ check }: { check: CheckResult }) => setProgress((list) => [...list, check]), [])
  )
  const tableValue = table ?? defaults.data?.table ?? ''
  const onSubmit = (event: FormEvent) => {
    event.preventDefault()
    setProgress([])
    run.mutate({
      url: target === 'app' ? null : url.trim(),
      headerBrand: brand || null,
      table: tableValue.trim() || null,
      writeToAppDatabase: target === 'app' && writes && tableValue.trim() !== '',
      headers: pairs(headers, ':'),
      params: pairs(params, '='),
      only: [],
      maxWaitSeconds: maxWait
    })
  }
  return (
    <div className="page conformance-page">
      <h1>Conformance</h1>
      <p className="muted">
        The checks of <code>syncscope check</code>: initial sync and chunks, offsets and handles, live long-poll and
        SSE, must-refetch, cache-control, etags, CORS and what a proxy or CDN in front does to them. Each finding shows
        the exchange, the rule and, for known proxy mistakes, the fix.
      </p>
      <ErrorBox error={defaults.error} />
      <form className="panel inline-form conformance-form" onSubmit={onSubmit}>
        <label>
          Endpoint
          <select
            value={target}
            onChange={(event) => setTarget(event.target.value as 'app' | 'other')}
            aria-label="Endpoint"
          >
            <option value="app">this app: {defaults.data?.url ?? '…'}</option>
            <option value="other">another shape endpoint</option>
          </select>
        </label>
        {target === 'other' && (
          <label>
            URL
            <input
              value={url}
              onChange={(event) => setUrl(event.target.value)}
              placeholder="https://…/v1/shape"
              aria-label="URL"
              required
            />
          </label>
        )}
        <label>
          Header brand
          <select
            value={brand}
            onChange={(event) => setBrand(event.target.value as '' | HeaderBrand)}
            aria-label="Header brand"
          >
            <option value="">
              {target === 'app' ? `this app's (${defaults.data?.headerBrand ?? '…'})` : 'service'}
            </option>
            <option value="service">service</option>
            <option value="electric">electric</option>
          </select>
        </label>
        <label>
          Table
          <input
            value={tableValue}
            onChange={(event) => setTable(event.target.value)}
            placeholder="empty: the endpoint fixes the shape"
            aria-label="Table"
          />
        </label>
        <label>
          Headers (K: V per line)
          <textarea
            rows={2}
            value={headers}
            onChange={(event) => setHeaders(event.target.value)}
            aria-label="Headers"
          />
        </label>
        <label>
          Parameters (k=v per line)
          <textarea
            rows={2}
            value={params}
            onChange={(event) => setParams(event.target.value)}
            aria-label="Parameters"
          />
        </label>
        <label>
          Max wait (s)
          <input
            type="number"
            min={1}
            max={120}
            value={maxWait}
            onChange={(event) => setMaxWait(Number(event.target.value))}
            aria-label="Max wait"
          />
        </label>
        {target === 'app' && (
          <label className="checkbox">
            <input
              type="checkbox"
              checked={writes}
              onChange={(event) => setWrites(event.target.checked)}
              aria-label="Live changes"
            />{' '}
            live checks change a table of their own (created and dropped) in this app's database
          </label>
        )}
        <button type="submit" disabled={run.isPending}>
          {run.isPending ? 'Checking…' : 'Run the check'}
        </button>
      </form>
      <ErrorBox error={run.error} />
      {run.isPending && (
        <section className="panel" aria-label="Progress" data-testid="conformance-progress">
          {progress.length} checks done
          {progress.map((check) => (
            <span key={check.id} className={`badge ${STATUS_CLASS[check.status]}`}>
              {check.id}
            </span>
          ))}
        </section>
      )}
      {run.data && !run.isPending && <ReportView report={run.data} />}
    </div>
  )
}
