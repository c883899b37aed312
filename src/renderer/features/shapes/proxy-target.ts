import type { ProxyStatus, UserToken } from '../../../shared/contract/proxy'
import type { ShapeTarget } from '../../../shared/contract/shapes-workbench'
import {
  gatekeeperStreamOptions,
  quoteColumn,
  type ResolvableRecord,
  type ShapeDraft,
  type ShapeStreamOptions
} from '../../../shared/shape-client'

type ProxyTarget = Extract<ShapeTarget, { kind: 'proxy' }>
type RunningProxy = Pick<Extract<ProxyStatus, { running: true }>, 'url'>

/** Asks main for a test user's short-lived access token (`proxy.userToken`). */
export type FetchUserToken = (userId: string) => Promise<UserToken>

/** A token is asked for again this long before it expires, so no request goes out with one about to lapse. */
const RENEW_BEFORE_MS = 15_000

/**
 * A test user's short-lived access token, asked of main when first needed, again shortly before it expires, and
 * after `renew()` (a 401). Only the `Authorization` value leaves this object; the recorder masks it.
 */
export class UserTokenSource {
  private token: Promise<UserToken> | null = null

  constructor(
    private readonly userId: string,
    private readonly fetchToken: FetchUserToken
  ) {}

  readonly authorization = async (): Promise<string> => {
    const current = this.token === null ? null : await this.token.catch(() => null)
    if (current === null || Date.parse(current.expiresAt) - Date.now() < RENEW_BEFORE_MS)
      this.token = this.fetchToken(this.userId)
    return `Bearer ${(await (this.token as Promise<UserToken>)).token}`
  }

  renew(): void {
    this.token = null
  }
}

/** What a stream through the proxy needs besides the definition: where, with which credentials, and what to do on a 401. */
export interface ProxyStreamTarget {
  url: string
  params: Record<string, string>
  headers: ResolvableRecord
  onError: NonNullable<ShapeStreamOptions['onError']>
}

/** What keeps a proxy target from running, in words; null when it can run. */
export function proxyTargetProblem(
  target: ProxyTarget,
  definition: ShapeDraft,
  proxy: ProxyStatus | undefined
): string | null {
  if (!proxy?.running) return 'the proxy is not running'
  if (!target.userId) return 'pick a user to call the proxy as'
  if (target.route === 'shape' && !target.shapeName) return 'pick a named shape'
  if (target.route === 'gatekeeper' && !definition.table) return 'pick a table'
  return null
}

/**
 * A named shape: `/api/shapes/<name>` with the user's token; the proxy sets table, columns, where and params, so only
 * `replica` goes with the protocol parameters. A 401 renews the token and retries; a 403 stops (the user may not).
 */
function namedShapeTarget(
  proxy: RunningProxy,
  target: ProxyTarget,
  definition: ShapeDraft,
  tokens: UserTokenSource
): ProxyStreamTarget {
  return {
    url: `${proxy.url}/api/shapes/${encodeURIComponent(target.shapeName)}`,
    params: definition.replica === 'default' ? {} : { replica: definition.replica },
    headers: { authorization: tokens.authorization },
    async onError(error) {
      if (error.status !== 401) return undefined
      tokens.renew()
      return {}
    }
  }
}

/**
 * The gatekeeper: `POST /gatekeeper/<table>` with the user's token for the composed shape, then the token-checking
 * proxy with the grant; a 401 there (the shape token expired) goes back to the gatekeeper, each grant noted.
 */
async function gatekeeperTarget(
  proxy: RunningProxy,
  definition: ShapeDraft,
  tokens: UserTokenSource,
  note: (text: string) => void
): Promise<ProxyStreamTarget> {
  const shape = {
    ...(definition.where.trim() ? { where: definition.where } : {}),
    ...(definition.columns.length > 0 ? { columns: definition.columns.map(quoteColumn) } : {}),
    ...(definition.params.length > 0
      ? { params: Object.fromEntries(definition.params.map((value, index) => [String(index + 1), value])) }
      : {}),
    replica: definition.replica
  }
  const gatekeeperUrl = `${proxy.url}/gatekeeper/${encodeURIComponent(definition.table)}`
  const options = await gatekeeperStreamOptions(
    { url: gatekeeperUrl, shape, headers: { authorization: tokens.authorization } },
    (grant) =>
      note(
        `the gatekeeper granted ${grant.params.table}${grant.params.where ? ` where ${grant.params.where}` : ''}; the shape token expires at ${new Date(grant.expiresAt).toLocaleTimeString()}`
      )
  )
  return { url: options.url, params: options.params, headers: options.headers, onError: options.onError }
}

export interface ProxyStreamContext {
  fetchToken: FetchUserToken
  /** Tells the person what happened before or outside the stream's own requests (each gatekeeper grant). */
  note: (text: string) => void
}

/** Stream options for a proxy target, after the gatekeeper step when the target goes through it. */
export function proxyStreamTarget(
  proxy: RunningProxy,
  target: ProxyTarget,
  definition: ShapeDraft,
  { fetchToken, note }: ProxyStreamContext
): Promise<ProxyStreamTarget> {
  const tokens = new UserTokenSource(target.userId, fetchToken)
  if (target.route === 'shape') return Promise.resolve(namedShapeTarget(proxy, target, definition, tokens))
  return gatekeeperTarget(proxy, definition, tokens, note)
}
