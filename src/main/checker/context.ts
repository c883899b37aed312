import type { Evidence, Finding } from '../../shared/findings'
import { headerName, type HeaderBrand, type ProtocolHeader } from '../../shared/protocol'
import { open, send, type OpenStream, type Probe, type ProbeFailure, type ProbeRequest } from './probe'
import { RULES, type FindingId } from './rules'
import type { WriteTable } from './write-table'

export interface CheckerOptions {
  /** The shape endpoint, e.g. http://127.0.0.1:3000/v1/shape or a proxy's /api/shapes/<name>. */
  url: string
  headerBrand: HeaderBrand
  /** A table the checker may read (sent as `table`); null when the endpoint fixes the shape itself. */
  table: string | null
  /** A Postgres (the one the service follows) where the checker creates, changes and drops a table of its own. */
  writeSql: string | null
  headers: Record<string, string>
  params: Record<string, string>
  /** Check ids to run (all when empty). */
  only: string[]
  /** Longest wait for a server timer: long-poll timeout, SSE keep-alive, SSE lifetime. */
  maxWaitSeconds: number
}

export const findingFor = (id: FindingId, message: string, evidence: Evidence[], brand: HeaderBrand): Finding => {
  const rule = RULES[id] as (typeof RULES)[FindingId] & { fix?: string }
  const branded = (text: string) => text.replaceAll('<brand>', brand)
  return {
    id,
    severity: rule.severity,
    message,
    rule: { text: branded(rule.rule), doc: `docs/protocol.md${rule.section}` },
    fix: rule.fix ? branded(rule.fix) : null,
    evidence
  }
}

/** What one check found: findings, or why it was skipped or could not finish, and notes on how it passed. */
export class Outcome {
  readonly findings: Finding[] = []
  skipped: string | null = null
  failed: string | null = null
  readonly notes: string[] = []

  constructor(private readonly brand: HeaderBrand) {}

  add(id: FindingId, message: string, ...evidence: Array<Evidence | Probe | OpenStream>): void {
    if (this.findings.some((finding) => finding.id === id)) return
    this.findings.push(findingFor(id, message, evidence.map(toEvidence), this.brand))
  }

  /** A request that gave nothing to judge: the endpoint is unreachable, or its body is past the checker's cap. */
  addFailure(failure: ProbeFailure): void {
    if (failure.kind === 'too-large')
      this.add('body.too-large', `The answer to "${failure.evidence.label}": ${failure.message}.`, failure.evidence)
    else this.add('setup.unreachable', `A request failed: ${failure.message}.`, failure.evidence)
  }

  has(id: FindingId): boolean {
    return this.findings.some((finding) => finding.id === id)
  }

  skip(reason: string): void {
    this.skipped = reason
  }

  /** The check could not finish (it threw): no verdict, and it counts as failed. */
  fail(reason: string): void {
    this.failed = reason
  }

  note(text: string): void {
    this.notes.push(text)
  }
}

export const toEvidence = (item: Evidence | Probe | OpenStream): Evidence =>
  'evidence' in item ? (typeof item.evidence === 'function' ? item.evidence() : item.evidence) : item

/** The endpoint under check: how to address it, and the header names of its brand. */
export class CheckContext {
  readonly brand: HeaderBrand
  readonly maxWaitMs: number
  private readonly memos = new Map<string, Promise<unknown>>()

  constructor(
    readonly options: CheckerOptions,
    readonly writeTable: WriteTable | null
  ) {
    this.brand = options.headerBrand
    this.maxWaitMs = options.maxWaitSeconds * 1000
  }

  /** The endpoint URL with the user's params, the table (when given) and these params; `null` removes a param. */
  url(params: Record<string, string | null> = {}): string {
    const url = new URL(this.options.url)
    const merged: Record<string, string | null> = {
      ...this.options.params,
      ...(this.options.table ? { table: this.options.table } : {}),
      ...params
    }
    for (const [key, value] of Object.entries(merged)) if (value !== null) url.searchParams.set(key, value)
    return url.toString()
  }

  headersFor(request: ProbeRequest): Record<string, string> {
    return { ...this.options.headers, ...request.headers }
  }

  send(request: ProbeRequest): Promise<Probe> {
    return send(this.url(request.params), request, this.headersFor(request))
  }

  open(request: ProbeRequest): Promise<OpenStream> {
    return open(this.url(request.params), request, this.headersFor(request))
  }

  /** A protocol header of the response under the brand checked. */
  header(probe: { headers: Headers }, name: ProtocolHeader): string | null {
    return probe.headers.get(headerName(this.brand, name))
  }

  /** Runs `task` once per key and shares its result between checks. */
  memo<T>(key: string, task: () => Promise<T>): Promise<T> {
    let memo = this.memos.get(key) as Promise<T> | undefined
    if (!memo) {
      memo = task()
      this.memos.set(key, memo)
    }
    return memo
  }
}
