import { z } from 'zod'
import { isChangeMessage, now, type Message } from '../../../../shared/shape-client'

/** Transactions whose times are kept (the oldest dropped first). */
const KEPT = 10_000
/** Points each chart draws at most. */
const CHART_POINTS = 2_000
/** Seconds of message rate kept. */
const RATE_SECONDS = 300
/** Commit times are asked for at most this often. */
const FETCH_EVERY_MS = 250

/** `GET /v1/debug/commit-times` (docs/protocol.md, a Syncscope extension). */
export const CommitTimesSchema = z.object({
  handle: z.string(),
  transactions: z.array(
    z.object({
      lsn: z.string().regex(/^\d+$/),
      xid: z.number().int(),
      /** Null when the server does not know it (the transaction came before the server started). */
      committed_at: z.number().nullable(),
      appended_at: z.number(),
      changes: z.number().int()
    })
  )
})

export interface Percentiles {
  p50: number
  p95: number
  p99: number
  max: number
}

export interface LatencyView {
  kind: 'latency'
  status: { state: 'waiting' | 'ok' | 'unavailable'; message: string }
  /** Transactions with all three times. */
  transactions: number
  /** Live changes received (messages carrying a commit LSN), and per second over the last 5 s. */
  liveMessages: number
  ratePerSecond: number
  stats: { append: Percentiles | null; client: Percentiles | null; appendToClient: Percentiles | null }
  /** x: commit time in seconds since the epoch; y: milliseconds. */
  chart: { x: number[]; append: number[]; client: number[] }
  /** x: whole seconds since the epoch; y: changes received in that second. */
  rate: { x: number[]; messages: number[] }
}

interface Sample {
  committedAt: number
  append: number
  client: number
}

export function percentiles(values: readonly number[]): Percentiles | null {
  if (values.length === 0) return null
  const sorted = [...values].sort((a, b) => a - b)
  const rank = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number
  return { p50: rank(50), p95: rank(95), p99: rank(99), max: sorted[sorted.length - 1] as number }
}

const round = (value: number) => Math.round(value * 10) / 10

export interface LatencyOptions {
  /** The commit-times endpoint and its parameters (the secret); null: the server is not known to tell them. */
  endpoint: { url: string; params: Record<string, string> } | null
  handle(): string | null
  changed(): void
  fetch?: typeof fetch
}

/**
 * Time from commit in Postgres to the server's append and to this client, per transaction: arrivals are noted as
 * changes come in (by commit LSN), commit and append times asked of the server, and the two joined by LSN.
 */
export class LatencyTracker {
  /** Arrival times of transactions whose server times are not known yet, by commit LSN. */
  private readonly arrivals = new Map<string, number>()
  /** Server times of transactions not arrived yet (the server lists what it appended, maybe before it got here). */
  private readonly listed = new Map<string, { committedAt: number; appendedAt: number }>()
  private readonly samples: Sample[] = []
  private readonly perSecond = new Map<number, number>()
  private liveMessages = 0
  private after: bigint = 0n
  private fetching = false
  private timer: ReturnType<typeof setTimeout> | null = null
  private unavailable: string | null = null
  private stopped = false

  constructor(private readonly options: LatencyOptions) {
    if (!options.endpoint) this.unavailable = 'a custom URL target: only Syncscope servers tell their commit times'
  }

  /** A batch of messages the client has just received and applied. */
  received(messages: readonly Message[]): void {
    const at = now()
    const second = Math.floor(at / 1000)
    let changes = 0
    for (const message of messages) {
      if (!isChangeMessage(message)) continue
      changes += 1
      const lsn = message.headers.lsn
      if (typeof lsn !== 'string') continue
      this.liveMessages += 1
      const times = this.listed.get(lsn)
      if (times) {
        this.listed.delete(lsn)
        this.sample(times, at)
      } else if (!this.arrivals.has(lsn) && BigInt(lsn) > this.after) {
        // (at or before `after` and not listed: the server has no commit time for it, it is never timed)
        this.arrivals.set(lsn, at)
      }
    }
    if (changes === 0) return
    this.perSecond.set(second, (this.perSecond.get(second) ?? 0) + changes)
    for (const old of this.perSecond.keys()) if (old <= second - RATE_SECONDS) this.perSecond.delete(old)
    this.options.changed()
    if (this.arrivals.size > 0) this.schedule()
  }

  /** The shape was refetched: arrivals of the old one cannot be matched any more. */
  reset(): void {
    this.arrivals.clear()
    this.listed.clear()
    this.after = 0n
  }

  stop(): void {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
  }

  view(): LatencyView {
    const last = this.samples.slice(-CHART_POINTS)
    const seconds = [...this.perSecond.keys()].sort((a, b) => a - b)
    const nowSecond = Math.floor(now() / 1000)
    const recent = seconds.filter((second) => second > nowSecond - 5)
    return {
      kind: 'latency',
      status: this.status(),
      transactions: this.samples.length,
      liveMessages: this.liveMessages,
      ratePerSecond: recent.reduce((sum, second) => sum + (this.perSecond.get(second) ?? 0), 0) / 5,
      stats: {
        append: percentiles(this.samples.map((sample) => sample.append)),
        client: percentiles(this.samples.map((sample) => sample.client)),
        appendToClient: percentiles(this.samples.map((sample) => sample.client - sample.append))
      },
      chart: {
        x: last.map((sample) => sample.committedAt / 1000),
        append: last.map((sample) => round(sample.append)),
        client: last.map((sample) => round(sample.client))
      },
      rate: { x: seconds, messages: seconds.map((second) => this.perSecond.get(second) ?? 0) }
    }
  }

  private status(): LatencyView['status'] {
    if (this.unavailable) return { state: 'unavailable', message: this.unavailable }
    if (this.samples.length === 0)
      return { state: 'waiting', message: 'waiting for a change committed while the shape is live' }
    return { state: 'ok', message: '' }
  }

  private schedule(): void {
    if (this.timer || this.fetching || this.unavailable || this.stopped) return
    this.timer = setTimeout(() => {
      this.timer = null
      void this.fetchTimes()
    }, FETCH_EVERY_MS)
  }

  private async fetchTimes(): Promise<void> {
    const handle = this.options.handle()
    const endpoint = this.options.endpoint
    if (!handle || !endpoint || this.arrivals.size === 0) return
    this.fetching = true
    try {
      const url = new URL(endpoint.url)
      for (const [name, value] of Object.entries(endpoint.params)) url.searchParams.set(name, value)
      url.searchParams.set('handle', handle)
      url.searchParams.set('after', this.after.toString())
      const response = await (this.options.fetch ?? globalThis.fetch)(url)
      if (response.status === 404 && !(await response.text()).includes('handle')) {
        this.unavailable = 'the server does not tell commit times (not a Syncscope server)'
      } else if (response.ok) {
        this.join(CommitTimesSchema.parse(await response.json()))
      }
    } catch (error) {
      this.unavailable = `commit times could not be read: ${(error as Error).message}`
    } finally {
      this.fetching = false
      this.options.changed()
      if (this.arrivals.size > 0 && !this.unavailable) this.schedule()
    }
  }

  private join(times: z.infer<typeof CommitTimesSchema>): void {
    for (const transaction of times.transactions) {
      const lsn = BigInt(transaction.lsn)
      if (lsn > this.after) this.after = lsn
      if (transaction.committed_at === null) continue
      const server = { committedAt: transaction.committed_at, appendedAt: transaction.appended_at }
      const arrived = this.arrivals.get(transaction.lsn)
      if (arrived === undefined) {
        this.listed.set(transaction.lsn, server)
        continue
      }
      this.arrivals.delete(transaction.lsn)
      this.sample(server, arrived)
    }
    if (this.samples.length > KEPT) this.samples.splice(0, this.samples.length - KEPT)
    // the server lists its appends in LSN order: an arrival at or before the last one listed that it did not list
    // (older than what it keeps, or without a commit time) is never matched; nor is what never arrives here
    for (const lsn of this.arrivals.keys()) if (BigInt(lsn) <= this.after) this.arrivals.delete(lsn)
    for (const lsn of this.listed.keys()) {
      if (this.listed.size <= KEPT) break
      this.listed.delete(lsn)
    }
  }

  private sample(server: { committedAt: number; appendedAt: number }, arrived: number): void {
    this.samples.push({
      committedAt: server.committedAt,
      append: server.appendedAt - server.committedAt,
      client: arrived - server.committedAt
    })
  }
}
