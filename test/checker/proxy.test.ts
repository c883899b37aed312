import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CheckerOptions } from '../../src/main/checker/context'
import { runConformance } from '../../src/main/checker/run'
import { GRACE, startProxyStack, type ProxyStack } from '../proxy/support'

describe('syncscope check against the authorising proxy in front of this app', () => {
  let stack: ProxyStack
  let base: CheckerOptions

  beforeAll(async () => {
    stack = await startProxyStack({ longPollTimeout: 2_000, sseKeepAlive: 1_000 })
    // The proxy fixes the shape (table, columns, row filter): no --table, credentials as a header.
    base = {
      url: `${stack.proxy.url}/api/shapes/my-issues`,
      headerBrand: 'service',
      table: null,
      writeSql: null,
      headers: {},
      params: {},
      only: [],
      maxWaitSeconds: 10
    }
  })
  afterAll(async () => {
    await stack?.close()
  })

  it('passes every check it can run with a user token; the rest are skipped with the reason', async () => {
    const token = await stack.accessToken(GRACE)
    const report = await runConformance({ ...base, headers: { authorization: `Bearer ${token}` } })
    expect(
      report.checks.flatMap((check) => check.findings.map((finding) => `${check.id}: ${finding.id} ${finding.message}`))
    ).toEqual([])
    const byId = Object.fromEntries(report.checks.map((check) => [check.id, check]))
    expect(byId['must-refetch']).toMatchObject({ status: 'skip', reason: expect.stringContaining('needs --write-sql') })
    expect(byId['sse-lifetime']).toMatchObject({ status: 'skip' })
    expect(byId.params?.reason).toBe('where/columns validation not tried: the endpoint fixes the shape (no --table)')
    expect(byId.cors?.reason).toContain('no CORS for other origins')
    expect(report.summary).toMatchObject({ fail: 0, warn: 0, skip: 2 })
    // The token is evidence the report never shows in full.
    expect(JSON.stringify(report)).not.toContain(token)
  }, 60_000)

  it('without credentials the initial sync fails with the 401 as evidence, and the checks after it are skipped', async () => {
    const report = await runConformance({ ...base, only: ['initial-sync', 'etag'] })
    const [initial, etag] = report.checks
    expect(initial?.findings[0]).toMatchObject({
      id: 'initial.status',
      message: expect.stringContaining('offset=-1 was answered 401')
    })
    expect(initial?.findings[0]?.evidence[0]?.response?.status).toBe(401)
    expect(etag).toMatchObject({ status: 'skip', reason: 'needs a completed initial sync (see initial-sync)' })
  })
})
