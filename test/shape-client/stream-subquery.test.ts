import { createHash } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { Shape, type HeaderBrand, type Message } from '../../src/shared/shape-client'
import { startTestProxy, waitFor, type ProxyAction, type TestProxy } from './support'

// A subquery shape's log as the reference sends it (notes/subqueries.md §2), answered over HTTP under either header
// brand, long-poll and SSE: what the workbench's client sees from a server that speaks the wire format.
const hash = (value: string) => createHash('md5').update(`stack-1handle-1v:${value}`).digest('hex')
const key = (id: number) => `"public"."tasks"/"${id}"`
const taskRow = (id: number, project: string, extra: Record<string, unknown> = {}): Message => ({
  key: key(id),
  value: { id: String(id), project_id: project },
  headers: {
    operation: 'insert',
    relation: ['public', 'tasks'],
    tags: [hash(project)],
    active_conditions: [true],
    ...extra
  }
})
const upToDate: Message = { headers: { control: 'up-to-date', global_last_seen_lsn: '2000' } }

const LOG: Message[][] = [
  [taskRow(1, '1'), taskRow(2, '1'), taskRow(3, '2'), upToDate],
  [{ headers: { event: 'move-out', patterns: [{ pos: 0, value: hash('1') }], txids: [812] } }, upToDate],
  [
    { headers: { event: 'move-in', patterns: [{ pos: 0, value: hash('3') }], txids: [813] } },
    taskRow(4, '3', { is_move_in: true }),
    taskRow(5, '3', { is_move_in: true }),
    { headers: { control: 'snapshot-end', xmin: '813', xmax: '814', xip_list: [] } },
    upToDate
  ]
]

function answer(brand: HeaderBrand, index: number, live: 'long-poll' | 'sse'): ProxyAction {
  const messages = LOG[index]
  if (!messages) return { kind: 'hang' }
  const headers: Record<string, string> = {
    [`${brand}-handle`]: 'handle-1',
    [`${brand}-offset`]: `${1000 + index}_0`,
    [`${brand}-schema`]: JSON.stringify({ id: { type: 'int4', pk_index: 0 }, project_id: { type: 'int4' } }),
    [`${brand}-cursor`]: String(index)
  }
  if (index > 0 && live === 'sse') {
    const body = messages.map((message) => `data: ${JSON.stringify(message)}\n\n`).join('')
    return { kind: 'respond', status: 200, headers: { ...headers, 'content-type': 'text/event-stream' }, body }
  }
  return {
    kind: 'respond',
    status: 200,
    headers: { ...headers, [`${brand}-up-to-date`]: '' },
    body: JSON.stringify(messages)
  }
}

describe.each([
  ['electric', 'long-poll'],
  ['service', 'long-poll'],
  ['electric', 'sse'],
  ['service', 'sse']
] as const)('a subquery shape under %s headers, live %s', (brand, live) => {
  let proxy: TestProxy | undefined
  let shape: Shape | undefined
  afterEach(async () => {
    shape?.stop()
    await proxy?.close()
  })

  it('drops the rows a move-out names and adds the move-in rows once', async () => {
    proxy = await startTestProxy('http://127.0.0.1:9/v1/shape', (_request, index) => answer(brand, index, live))
    shape = new Shape({
      url: proxy.url,
      params: { table: 'tasks', where: 'project_id IN (SELECT id FROM projects WHERE NOT archived)' },
      live,
      sseMinConnectionMs: 0
    })
    const kinds: string[] = []
    shape.subscribe((changes) => kinds.push(...changes.map((change) => change.kind)))
    void shape.start()
    await waitFor(() => shape!.rows.has(key(5)), 'the move-in rows')
    expect([...shape.rows.keys()].sort()).toEqual([key(3), key(4), key(5)])
    expect(kinds).toEqual(['insert', 'insert', 'insert', 'delete', 'delete', 'insert', 'insert'])
    expect(shape.membership(key(4))).toEqual({ tags: [[hash('3')]], activeConditions: [true] })
    expect(shape.stream.current.brand).toBe(brand)
  })
})
