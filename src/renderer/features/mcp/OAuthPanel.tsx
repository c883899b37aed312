import type { McpEntry } from '../../../shared/contract/mcp'
import { ErrorBox } from '../../components/ErrorBox'
import { useCall, useCallMutation } from '../../hooks'

const formatExpiry = (expiresAt: number | null) =>
  expiresAt === null
    ? 'unknown'
    : `${new Date(expiresAt * 1000).toLocaleString()}${expiresAt * 1000 < Date.now() ? ' (expired)' : ''}`

/** Token status, Log in / Log out, and each step of the OAuth flows with its HTTP exchange. */
export function OAuthPanel({ entry }: { entry: McpEntry }) {
  // kept current by the 'mcp.oauthStep' events (useEventsIntoCache)
  const log = useCall('mcp.oauthLog', { name: entry.name })
  const login = useCallMutation('mcp.login', ['mcp.list', 'mcp.oauthLog'])
  const logout = useCallMutation('mcp.logout', ['mcp.list', 'mcp.oauthLog'])
  const tokens = entry.tokens
  const startLogin = () =>
    login.mutate(
      { name: entry.name },
      {
        onSuccess: ({ authorizeUrl }) => {
          if (authorizeUrl) window.open(authorizeUrl, '_blank', 'noopener')
        }
      }
    )
  return (
    <section className="panel" aria-label="OAuth" data-testid="mcp-oauth">
      <h2>OAuth — {entry.name}</h2>
      <dl className="facts">
        <dt>Access token</dt>
        <dd data-testid="mcp-token-status">{tokens?.hasAccessToken ? <code>{tokens.preview}</code> : 'none'}</dd>
        <dt>Refresh token</dt>
        <dd>{tokens?.hasRefreshToken ? 'yes (kept secret)' : 'no'}</dd>
        <dt>Expires</dt>
        <dd>{tokens?.hasAccessToken ? formatExpiry(tokens.expiresAt) : '—'}</dd>
        <dt>Scopes</dt>
        <dd>{tokens?.scope ?? '—'}</dd>
        <dt>Issuer</dt>
        <dd>{tokens?.issuer ?? '—'}</dd>
        <dt>Client</dt>
        <dd>{tokens?.clientId ?? 'not registered yet'}</dd>
      </dl>
      <div className="toolbar">
        <button type="button" onClick={startLogin} disabled={login.isPending} data-testid="mcp-login">
          {login.isPending ? 'Starting…' : 'Log in'}
        </button>
        <button
          type="button"
          onClick={() => logout.mutate({ name: entry.name })}
          disabled={!tokens?.hasAccessToken}
          data-testid="mcp-logout"
        >
          Log out
        </button>
        {login.data?.authorizeUrl && (
          <a href={login.data.authorizeUrl} target="_blank" rel="noopener noreferrer">
            open the authorisation page again
          </a>
        )}
      </div>
      <ErrorBox error={login.error ?? logout.error} />
      <h3>Steps</h3>
      <ol className="mcp-steps" data-testid="mcp-oauth-steps">
        {log.data?.map((exchange, index) => (
          <li key={index} className={exchange.status !== null && exchange.status >= 400 ? 'warn' : ''}>
            <span className="badge">{exchange.step}</span> <code>{exchange.method}</code>{' '}
            <code className="mcp-url">{exchange.url}</code>{' '}
            {exchange.status !== null && <strong>{exchange.status}</strong>}
            {exchange.note && <small> — {exchange.note}</small>}
            {exchange.claims && (
              <details>
                <summary>access token claims</summary>
                <pre>{JSON.stringify(exchange.claims, null, 2)}</pre>
              </details>
            )}
          </li>
        ))}
      </ol>
    </section>
  )
}
