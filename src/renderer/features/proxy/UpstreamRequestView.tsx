import type { UpstreamRequest } from '../../../shared/contract/proxy'
import { PairsTable } from './PairsTable'

/** The upstream URL the proxy built, one parameter a line, those the proxy set itself marked. */
export function UpstreamRequestView({ upstream }: { upstream: UpstreamRequest | null }) {
  if (!upstream) return <p className="muted">The proxy answered itself: nothing went upstream.</p>
  const url = new URL(upstream.url)
  const serverSet = new Set(upstream.serverParams)
  const pairs = [...url.searchParams].map(([name, value]) =>
    serverSet.has(name)
      ? { name, value, className: 'server-set', note: <span className="badge ok">set by the proxy</span> }
      : { name, value, className: 'client-set', note: <span className="badge">from the client</span> }
  )
  return (
    <div className="upstream-request" data-testid="upstream-request">
      <code>
        {upstream.method} {url.origin}
        {url.pathname}
      </code>
      <PairsTable pairs={pairs} />
    </div>
  )
}
