import { clusterState } from '../../../shared/contract/db'
import { formatBytes } from '../../../shared/format-bytes'
import { ErrorBox } from '../../components/ErrorBox'
import { useCall, useCallMutation } from '../../hooks'

/**
 * The embedded clusters root keeps apart from their data folders (`db.clusters`), with `syncscope clusters prune`'s
 * removal of the orphaned ones that are not running. Sizes walk the folders: read when asked, not on a timer.
 */
export function ClustersPanel() {
  const list = useCall('db.clusters', {})
  const prune = useCallMutation('db.pruneClusters', ['db.clusters'])
  const clusters = list.data?.clusters ?? []
  const prunable = clusters.filter((cluster) => cluster.orphaned && !cluster.running)
  const total = clusters.reduce((sum, cluster) => sum + cluster.sizeBytes, 0)
  return (
    <section className="panel" aria-label="Clusters">
      <h2>Embedded clusters</h2>
      <ErrorBox error={list.error ?? prune.error} />
      {list.data && list.data.root === null && (
        <p className="count">Not running as root: each data folder holds its own cluster, none is kept apart.</p>
      )}
      {list.data?.root && (
        <>
          <p className="count" data-testid="clusters-summary">
            {clusters.length} cluster{clusters.length === 1 ? '' : 's'} in <code>{list.data.root}</code>,{' '}
            {formatBytes(total)}
          </p>
          <div className="toolbar">
            <button type="button" className="secondary" onClick={() => void list.refetch()} disabled={list.isFetching}>
              Refresh
            </button>
            <button
              type="button"
              onClick={() => prune.mutate({})}
              disabled={prune.isPending || prunable.length === 0}
              data-testid="clusters-prune"
              title="Remove the orphaned clusters whose Postgres is not running (syncscope clusters prune)"
            >
              Prune {prunable.length} orphaned (
              {formatBytes(prunable.reduce((sum, cluster) => sum + cluster.sizeBytes, 0))})
            </button>
            {prune.data && (
              <span data-testid="clusters-pruned">
                {prune.data.removed.length} removed,{' '}
                {formatBytes(prune.data.removed.reduce((sum, cluster) => sum + cluster.sizeBytes, 0))} freed
              </span>
            )}
          </div>
          <table className="grid compact" data-testid="clusters">
            <thead>
              <tr>
                <th>Id</th>
                <th>Data folder</th>
                <th>Size</th>
                <th>Running</th>
                <th>Orphaned</th>
                <th>State</th>
                <th>Why</th>
              </tr>
            </thead>
            <tbody>
              {clusters.map((cluster) => (
                <tr key={cluster.id} data-testid={`cluster-${cluster.id}`}>
                  <td className="mono">
                    {cluster.id} {cluster.current && <span className="badge ok">this app</span>}
                  </td>
                  <td className="mono">{cluster.dataFolder ?? '—'}</td>
                  <td>{formatBytes(cluster.sizeBytes)}</td>
                  <td>{cluster.running ? 'yes' : 'no'}</td>
                  <td>{cluster.orphaned ? 'yes' : 'no'}</td>
                  <td className={cluster.orphaned ? 'warn' : ''}>{clusterState(cluster)}</td>
                  <td>{cluster.reason}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  )
}
