import { QueryClient, QueryObserver } from '@tanstack/react-query'
import { describe, expect, test, vi } from 'vitest'
import { PROXY_EXCHANGES_KEPT, type ProxyExchange } from '../../src/shared/contract/proxy'
import type { McpRpcMessage } from '../../src/shared/contract/mcp'
import { writeEventToCache } from '../../src/renderer/event-cache'
import { decodeEvent, decodeEventFrame } from '../../src/renderer/events'

function warnings() {
  const lines: string[] = []
  return { lines, warn: (line: string) => void lines.push(line) }
}

const exchange = (id: string): ProxyExchange => ({
  id,
  at: '2026-11-24T10:00:00.000Z',
  method: 'GET',
  path: '/api/shapes/items',
  status: 200,
  subject: 'alice',
  code: null,
  message: null,
  upstream: null
})

describe('decodeEvent', () => {
  test('an event that matches the contract comes back typed, without a warning', () => {
    const { lines, warn } = warnings()
    expect(decodeEvent('db.changed', { reason: 'statement' }, warn)).toEqual({
      name: 'db.changed',
      payload: { reason: 'statement' }
    })
    expect(lines).toEqual([])
  })

  test('a payload that does not match is dropped with one warning naming the event and the field', () => {
    const { lines, warn } = warnings()
    expect(decodeEvent('mcp.changed', { names: 'not-a-list' }, warn)).toBeNull()
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain("'mcp.changed'")
    expect(lines[0]).toContain('names')
  })

  test('an unknown event name is dropped with one warning naming it', () => {
    const { lines, warn } = warnings()
    expect(decodeEvent('shapes.exploded', {}, warn)).toBeNull()
    expect(lines).toEqual([expect.stringContaining('"shapes.exploded"')])
  })

  test('a frame that is not JSON, or not an object, is dropped with one warning instead of throwing', () => {
    const { lines, warn } = warnings()
    expect(decodeEventFrame('{"name": "db.changed", "payl', warn)).toBeNull()
    expect(decodeEventFrame('42', warn)).toBeNull()
    expect(decodeEventFrame('null', warn)).toBeNull()
    expect(lines).toHaveLength(3)
    expect(decodeEventFrame(JSON.stringify({ name: 'proxy.config', payload: { ok: true } }), warn)).toEqual({
      name: 'proxy.config',
      payload: { ok: true }
    })
    expect(lines).toHaveLength(3)
  })
})

describe('writeEventToCache', () => {
  const fresh = () => new QueryClient({ defaultOptions: { queries: { retry: false } } })

  test('a proxy exchange is appended to the list the Proxy page reads, at most as many as main keeps, once', () => {
    const client = fresh()
    const full = Array.from({ length: PROXY_EXCHANGES_KEPT }, (_, index) => exchange(`e${index}`))
    client.setQueryData(['proxy.exchanges', {}], full)
    expect(writeEventToCache(client, { name: 'proxy.exchange', payload: exchange('new') })).toBe(true)
    writeEventToCache(client, { name: 'proxy.exchange', payload: exchange('new') })
    const list = client.getQueryData<ProxyExchange[]>(['proxy.exchanges', {}])!
    expect(list).toHaveLength(PROXY_EXCHANGES_KEPT)
    expect(list.at(-1)!.id).toBe('new')
    expect(list[0]!.id).toBe('e1')
  })

  test('a JSON-RPC message goes to its own server log only, and a message the fetch already returned is not added twice', () => {
    const client = fresh()
    const message: McpRpcMessage = {
      at: '2026-11-24T10:00:00.000Z',
      direction: 'sent',
      message: { jsonrpc: '2.0', id: 1, method: 'tools/list' }
    }
    client.setQueryData(['mcp.rpcLog', { name: 'a' }], [])
    client.setQueryData(
      ['mcp.rpcLog', { name: 'b' }],
      [{ message: { method: 'tools/list', id: 1, jsonrpc: '2.0' }, direction: 'sent', at: message.at }]
    )
    writeEventToCache(client, { name: 'mcp.rpc', payload: { name: 'a', message } })
    writeEventToCache(client, { name: 'mcp.rpc', payload: { name: 'b', message } })
    expect(client.getQueryData(['mcp.rpcLog', { name: 'a' }])).toEqual([message])
    expect(client.getQueryData(['mcp.rpcLog', { name: 'b' }])).toHaveLength(1)
  })

  test('a list nobody has read is left for its first fetch', () => {
    const client = fresh()
    writeEventToCache(client, { name: 'proxy.exchange', payload: exchange('x') })
    expect(client.getQueryState(['proxy.exchanges', {}])).toBeUndefined()
  })

  test('a list being fetched is fetched again: its answer may predate the event', async () => {
    const client = fresh()
    let fetches = 0
    let release: (list: ProxyExchange[]) => void = () => undefined
    // a page reading the list, as useCall does
    const reader = new QueryObserver<ProxyExchange[]>(client, {
      queryKey: ['proxy.exchanges', {}],
      queryFn: () => {
        fetches += 1
        return fetches === 1
          ? new Promise<ProxyExchange[]>((resolve) => (release = resolve))
          : Promise.resolve([exchange('late')])
      }
    })
    const unsubscribe = reader.subscribe(() => undefined)
    await vi.waitFor(() => expect(fetches).toBe(1), { timeout: 15_000 })
    writeEventToCache(client, { name: 'proxy.exchange', payload: exchange('late') })
    release([])
    await vi.waitFor(() => expect(client.getQueryData(['proxy.exchanges', {}])).toEqual([exchange('late')]), {
      timeout: 15_000
    })
    expect(fetches).toBe(2)
    unsubscribe()
  })

  test('an event without state to write is left to its readers to refetch', () => {
    expect(writeEventToCache(fresh(), { name: 'db.changed', payload: { reason: 'statement' } })).toBe(false)
  })
})
