import { useMemo } from 'react'
import { Chart } from '../../components/Chart'
import type { Percentiles } from './engine/latency'
import type { WorkbenchSession } from './session'
import { useSessionView } from './use-view'

const ms = (value: number | undefined) => (value === undefined ? '–' : `${value.toFixed(1)} ms`)

const STATS = ['p50', 'p95', 'p99', 'max'] as const

const LEGS = [
  [
    'append',
    'commit → server append',
    'Postgres commit time (from the transaction) to the server appending it to this shape’s log'
  ],
  ['client', 'commit → client', 'Postgres commit time to this client having the change (received, parsed and applied)'],
  ['appendToClient', 'server append → client', 'The server’s append to this client having the change']
] as const

function StatsTable({ stats }: { stats: Record<(typeof LEGS)[number][0], Percentiles | null> }) {
  return (
    <table className="grid compact latency-stats" data-testid="latency-stats">
      <thead>
        <tr>
          <th />
          {STATS.map((stat) => (
            <th key={stat}>{stat}</th>
          ))}
        </tr>
      </thead>
      <tbody>
        {LEGS.map(([id, name, title]) => (
          <tr key={id} data-leg={id}>
            <th title={title}>{name}</th>
            {STATS.map((stat) => (
              <td key={stat} className="num" data-stat={stat}>
                {ms(stats[id]?.[stat])}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  )
}

const LATENCY_SERIES = [
  { label: 'commit → append', stroke: '#2f7ed8' },
  { label: 'commit → client', stroke: '#d8572f' }
]
const RATE_SERIES = [{ label: 'changes received', stroke: '#3a9d5d', bars: true }]

/**
 * How long changes take to reach this client: per transaction, from its commit in Postgres to the server's append and
 * to this client (the server tells commit and append times, GET /v1/debug/commit-times), as percentiles and as a
 * live chart, with the rate of changes received beside it.
 */
export function LatencyView({ session }: { session: WorkbenchSession }) {
  const view = useSessionView(session, { kind: 'latency' })
  const latency = useMemo<[number[], ...number[][]]>(
    () => [view?.chart.x ?? [], view?.chart.append ?? [], view?.chart.client ?? []],
    [view?.chart]
  )
  const rate = useMemo<[number[], ...number[][]]>(() => [view?.rate.x ?? [], view?.rate.messages ?? []], [view?.rate])
  if (!view) return <p className="muted">Reading the latencies…</p>
  return (
    <div className="latency-view">
      <p className={view.status.state === 'unavailable' ? 'warn' : 'muted'} data-testid="latency-status">
        {view.status.state === 'ok'
          ? 'Times of each transaction this client received live: commit (Postgres), append (server), arrival (here).'
          : view.status.message}
      </p>
      <dl className="facts latency-facts">
        <dt>transactions timed</dt>
        <dd data-testid="latency-transactions">{view.transactions}</dd>
        <dt>live changes received</dt>
        <dd data-testid="latency-messages">{view.liveMessages}</dd>
        <dt>changes / s (last 5 s)</dt>
        <dd data-testid="latency-rate">{view.ratePerSecond.toFixed(1)}</dd>
      </dl>
      <StatsTable stats={view.stats} />
      <div className="latency-charts">
        <Chart
          title="Latency per transaction"
          unit="ms"
          series={LATENCY_SERIES}
          data={latency}
          testId="latency-chart"
        />
        <Chart
          title="Changes received per second"
          unit="changes"
          series={RATE_SERIES}
          data={rate}
          testId="rate-chart"
        />
      </div>
    </div>
  )
}
