import { useState } from 'react'
import { keepPreviousData } from '@tanstack/react-query'
import { formatBytes } from '../../../shared/format-bytes'
import type { ServerState, ShapeQuery } from '../../../shared/protocol/debug-shapes'
import { ErrorBox } from '../../components/ErrorBox'
import { useCall } from '../../hooks'
import { ClustersPanel } from './ClustersPanel'
import { ReplicationPanel } from './ReplicationPanel'
import { ShapesTable, type ShapesView } from './ShapesTable'
import { WINDOW_ROWS, share } from './server-view'
import './server.css'

/** How often the page reads the server's state again while it is open. */
const REFRESH_MS = 2000

/**
 * The shape server's state (the `server.state` call, the same state `GET /v1/debug/shapes` answers): its limits, the
 * replication slots with their warnings, every shape (a window of them at a time), and the embedded clusters.
 */
export function ServerPage() {
  const [view, setView] = useState<ShapesView>({
    sort: { key: 'last_used', direction: 'ascending' },
    filter: '',
    start: 0
  })
  const query: ShapeQuery = { offset: view.start, limit: WINDOW_ROWS, sort: view.sort, filter: view.filter }
  const state = useCall('server.state', query, { refetchInterval: REFRESH_MS, placeholderData: keepPreviousData })
  const data = state.data
  return (
    <div className="page server-page">
      <h1>Server</h1>
      <ErrorBox error={state.error} />
      {data && <Summary server={data.server} />}
      {data && <ReplicationPanel replication={data.replication} />}
      {data && <ShapesTable state={data} view={view} onView={setView} />}
      <ClustersPanel />
    </div>
  )
}

/** A count against its bound: a bar, then `<count> of <bound> (<share>)`. */
function Meter({
  label,
  used,
  bound,
  count,
  of,
  testId
}: {
  label: string
  used: number
  bound: number
  count: string
  of: string
  testId: string
}) {
  return (
    <div className="server-meter" data-testid={`${testId}-meter`}>
      <span className="server-meter-label">{label}</span>
      <meter min={0} max={bound || 1} value={used} high={bound * 0.8} optimum={0} />
      <span>
        <span data-testid={testId}>{count}</span> of {of} ({share(used, bound)})
      </span>
    </div>
  )
}

function Summary({ server }: { server: ServerState['server'] }) {
  return (
    <section className="panel" aria-label="Shape server">
      <h2>
        Shape server{' '}
        <span className={`badge ${server.status === 'active' ? 'ok' : 'error'}`} data-testid="server-status">
          {server.status}
        </span>
      </h2>
      {server.message && <p className="warn">{server.message}</p>}
      <Meter
        label="Shapes"
        used={server.shapes}
        bound={server.max_shapes}
        count={String(server.shapes)}
        of={`${server.max_shapes.toLocaleString('en')} (--max-shapes)`}
        testId="server-shape-count"
      />
      <Meter
        label="Disk"
        used={server.disk_used_bytes}
        bound={server.max_disk_bytes}
        count={formatBytes(server.disk_used_bytes)}
        of={`${formatBytes(server.max_disk_bytes)} (--max-disk)`}
        testId="server-disk-used"
      />
      <dl className="facts">
        <dt>Long-polls held</dt>
        <dd data-testid="server-long-polls">{server.long_polls}</dd>
        <dt>SSE streams open</dt>
        <dd data-testid="server-sse-streams">{server.sse_streams}</dd>
        <dt>Last LSN processed</dt>
        <dd className="mono">{server.global_last_seen_lsn}</dd>
      </dl>
    </section>
  )
}
