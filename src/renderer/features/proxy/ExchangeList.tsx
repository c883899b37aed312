import { useCall } from '../../hooks'

/** The latest requests the proxy answered, live. */
export function ExchangeList() {
  // kept current by the 'proxy.exchange' events (useEventsIntoCache)
  const exchanges = useCall('proxy.exchanges', {})
  const list = [...(exchanges.data ?? [])].reverse().slice(0, 30)
  return (
    <section className="panel" aria-label="Recent requests">
      <h2>Recent requests</h2>
      {list.length === 0 ? (
        <p className="muted">No request yet.</p>
      ) : (
        <table className="grid compact" data-testid="exchanges">
          <thead>
            <tr>
              <th>time</th>
              <th>request</th>
              <th>status</th>
              <th>caller</th>
              <th>why</th>
            </tr>
          </thead>
          <tbody>
            {list.map((exchange) => (
              <tr key={exchange.id}>
                <td>{exchange.at.slice(11, 23)}</td>
                <td>
                  <code>
                    {exchange.method} {exchange.path}
                  </code>
                </td>
                <td>{exchange.status}</td>
                <td>{exchange.subject ?? '—'}</td>
                <td>
                  {exchange.code ? `${exchange.code}: ${exchange.message ?? ''}` : exchange.upstream ? 'forwarded' : ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}
