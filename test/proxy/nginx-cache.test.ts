import { afterAll, beforeAll, expect, it } from 'vitest'
import { describeWith } from '../support/facility-tests'
import { startNginx, type RunningNginx } from '../support/nginx'
import { bearer, DENNIS, GRACE, messages, rowsOf, startProxyStack, type ProxyStack } from './support'

describeWith(
  ['nginx'],
  'a real caching proxy (nginx proxy_cache) in front of the proxy: what it caches for one user, it never serves another',
  () => {
    let stack: ProxyStack
    let nginx: RunningNginx
    let cacheUrl: string

    beforeAll(async () => {
      stack = await startProxyStack()
      // A shared cache in front of the proxy: nginx caches the `offset=-1` snapshot (public, max-age=604800) by URL.
      nginx = await startNginx(stack.proxy.url, 'proxy_http_version 1.1; proxy_cache shapes;')
      cacheUrl = nginx.url
    })
    afterAll(async () => {
      await nginx?.close()
      await stack?.close()
    })

    const viaCache = async (userId: string | null) =>
      fetch(`${cacheUrl}/api/shapes/my-issues?offset=-1`, {
        headers: userId ? bearer(await stack.accessToken(userId)) : {}
      })

    it('serves each user only their own cached rows, and nothing to a caller without credentials', async () => {
      const graceToken = bearer(await stack.accessToken(GRACE))
      const first = await fetch(`${cacheUrl}/api/shapes/my-issues?offset=-1`, { headers: graceToken })
      expect(first.headers.get('x-cache-status')).toBe('MISS')
      const graceRows = rowsOf(await messages(first))
      expect(graceRows.length).toBeGreaterThan(0)
      const again = await fetch(`${cacheUrl}/api/shapes/my-issues?offset=-1`, { headers: graceToken })
      expect(again.headers.get('x-cache-status')).toBe('HIT')
      expect(rowsOf(await messages(again))).toEqual(graceRows)

      const dennis = await viaCache(DENNIS)
      expect(dennis.status).toBe(200)
      expect(dennis.headers.get('x-cache-status')).not.toBe('HIT')
      const dennisRows = rowsOf(await messages(dennis))
      expect(dennisRows.length).toBeGreaterThan(0)
      expect(dennisRows.every((row) => row.owner_id === DENNIS)).toBe(true)

      const anonymous = await viaCache(null)
      expect(anonymous.status).toBe(401)

      const graceLater = await viaCache(GRACE)
      expect(rowsOf(await messages(graceLater)).every((row) => row.owner_id === GRACE)).toBe(true)
    })
  }
)
