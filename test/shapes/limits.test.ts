import { type Message, Shape as ElectricShape, ShapeStream, isControlMessage } from '@electric-sql/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { get, syncToEnd } from '../support/shape-http'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'

const BRAND = 'electric'

/** The shape's handle still serves it (200), or the client is sent to refetch (409). */
async function statusOf(server: TestShapeServer, where: string, handle: string, offset: string): Promise<number> {
  return (await get(server.url, { table: 'issues', where, handle, offset }, {}, BRAND)).status
}

describe('--max-shapes: the least recently used shapes are dropped, and their clients refetch', () => {
  let server: TestShapeServer
  const logs: string[] = []

  beforeAll(async () => {
    server = await startTestShapeServer({
      headerBrand: BRAND,
      maxShapes: 2,
      longPollTimeout: 20_000,
      log: (line) => logs.push(line)
    })
    await server.pool.query(
      "INSERT INTO issues (id, project_id, title) SELECT g, 1000000001, 'limits ' || g FROM generate_series(97000, 97039) g"
    )
  })
  afterAll(async () => server?.close())

  const count = () => server.app.rooms.shapes.service()?.shapeCount

  it('drops the shape used least recently, not the oldest: a request is a use', async () => {
    const a = await syncToEnd(server.url, { table: 'issues', where: 'id BETWEEN 97000 AND 97004' }, BRAND)
    const b = await syncToEnd(server.url, { table: 'issues', where: 'id BETWEEN 97005 AND 97009' }, BRAND)
    // a catch-up request for A makes B the least recently used
    expect(await statusOf(server, 'id BETWEEN 97000 AND 97004', a.handle, a.offset)).toBe(200)
    await syncToEnd(server.url, { table: 'issues', where: 'id BETWEEN 97010 AND 97014' }, BRAND)
    expect(count()).toBe(2)
    expect(await statusOf(server, 'id BETWEEN 97000 AND 97004', a.handle, a.offset)).toBe(200)
    const gone = await get(
      server.url,
      { table: 'issues', where: 'id BETWEEN 97005 AND 97009', handle: b.handle, offset: b.offset },
      {},
      BRAND
    )
    expect(gone.status).toBe(409)
    expect(gone.body).toEqual([{ headers: { control: 'must-refetch' } }])
    expect(gone.header('@handle')).not.toBe(b.handle)
    expect(count()).toBe(2)
    expect(logs.join('\n')).toMatch(/least recently used shape\(s\) dropped: more than --max-shapes 2/)
  })

  it('a live @electric-sql/client whose shape is dropped gets must-refetch and recovers, rows and changes', async () => {
    const where = 'id BETWEEN 97020 AND 97039'
    const controller = new AbortController()
    const stream = new ShapeStream({
      url: `${server.url}/v1/shape`,
      params: { table: 'issues', where },
      signal: controller.signal
    })
    const controls: string[] = []
    stream.subscribe((messages: Message[]) => {
      for (const message of messages) if (isControlMessage(message)) controls.push(message.headers.control)
    })
    const shape = new ElectricShape(stream)
    try {
      expect((await shape.rows).length).toBe(20)
      const handle = stream.shapeHandle
      // the client now holds a live long-poll (20 s): two new shapes make its shape the least recently used
      await expect.poll(() => stream.isUpToDate).toBe(true)
      await syncToEnd(server.url, { table: 'issues', where: 'id BETWEEN 97000 AND 97001' }, BRAND)
      await syncToEnd(server.url, { table: 'issues', where: 'id BETWEEN 97002 AND 97003' }, BRAND)
      await expect.poll(() => controls.includes('must-refetch'), { timeout: 15_000 }).toBe(true)
      await expect.poll(() => stream.shapeHandle !== handle, { timeout: 15_000 }).toBe(true)
      await server.pool.query(
        "INSERT INTO issues (id, project_id, title) VALUES (97030, 1000000001, 'after the refetch') ON CONFLICT (id) DO UPDATE SET title = 'after the refetch'"
      )
      await expect
        .poll(() => shape.currentRows.find((row) => Number(row.id) === 97030)?.title, { timeout: 15_000 })
        .toBe('after the refetch')
      expect(shape.currentRows.length).toBe(20)
      expect(count()).toBeLessThanOrEqual(2)
    } finally {
      controller.abort()
    }
  })

  it('restarted with a lower --max-shapes, keeps the newest shapes and drops the others', async () => {
    const newest = await syncToEnd(server.url, { table: 'issues', where: 'id BETWEEN 97015 AND 97019' }, BRAND)
    expect(count()).toBe(2)
    await server.stop()
    const restarted = await startTestShapeServer({
      headerBrand: BRAND,
      dataDir: server.dataDir,
      maxShapes: 1,
      log: (line) => logs.push(line)
    })
    try {
      expect(restarted.app.rooms.shapes.service()?.shapeCount).toBe(1)
      expect(restarted.app.rooms.shapes.service()?.shapeByHandle(newest.handle)).toBeDefined()
      const resumed = await get(
        restarted.url,
        { table: 'issues', where: 'id BETWEEN 97015 AND 97019', handle: newest.handle, offset: newest.offset },
        {},
        BRAND
      )
      expect(resumed.status).toBe(200)
      expect(logs.join('\n')).toMatch(/1 least recently used shape\(s\) dropped: more than --max-shapes 1/)
    } finally {
      await restarted.stop()
    }
  })
})

describe('--max-disk: the shape logs keep to a disk budget', () => {
  let server: TestShapeServer
  const MAX_DISK = 1536 * 1024
  const group = (n: number) => ({ table: 'disk_rows', where: `grp = ${n}` })

  beforeAll(async () => {
    server = await startTestShapeServer({ headerBrand: BRAND, maxDisk: MAX_DISK, chunkBytes: 100_000 })
    await server.pool.query('CREATE TABLE disk_rows (id int PRIMARY KEY, grp int NOT NULL, body text NOT NULL)')
    // each group of 1,000 rows is a snapshot of about 600 kB: two fit the budget, three do not
    await server.pool.query("INSERT INTO disk_rows SELECT g, g % 3, repeat('x', 500) FROM generate_series(1, 3000) g")
  })
  afterAll(async () => server?.close())

  const statusFor = async (n: number, shape: { handle: string; offset: string }) =>
    (await get(server.url, { ...group(n), handle: shape.handle, offset: shape.offset }, {}, BRAND)).status
  const used = () => server.app.rooms.shapes.service()?.diskUsed ?? NaN
  /** Whether the shape is still kept, asked without a request (which would count as a use). */
  const kept = (handle: string) => server.app.rooms.shapes.service()?.shapeByHandle(handle) !== undefined

  it('drops the least recently used shape when a log grows past the budget, and when a new snapshot does', async () => {
    const first = await syncToEnd(server.url, group(1), BRAND)
    const second = await syncToEnd(server.url, group(2), BRAND)
    expect(used()).toBeLessThan(MAX_DISK)
    expect(await statusFor(1, first)).toBe(200)
    expect(await statusFor(2, second)).toBe(200)

    // group 2's log grows by about 650 kB: the budget is checked off the change path, within a second or so
    await server.pool.query("UPDATE disk_rows SET body = repeat('y', 500) WHERE grp = 2")
    await expect.poll(() => kept(first.handle), { timeout: 15_000 }).toBe(false)
    expect(kept(second.handle)).toBe(true)
    expect(await statusFor(1, first)).toBe(409)

    // the refetch of group 1 and group 0's snapshot push out group 2 (now the least recently used)
    const third = await syncToEnd(server.url, group(0), BRAND)
    expect(kept(second.handle)).toBe(false)
    expect(kept(third.handle)).toBe(true)
    expect(await statusFor(2, second)).toBe(409)
    expect(used()).toBeLessThanOrEqual(MAX_DISK)
  })

  it('refuses a shape whose snapshot alone does not fit, naming the limit, and stays healthy', async () => {
    // its first chunk is served while the rest is written: the client following it is refused once it is too large
    let response = await get(server.url, { table: 'disk_rows', offset: '-1' }, {}, BRAND)
    const handle = response.header('@handle') ?? ''
    while (response.status === 200) {
      const offset = response.header('@offset') ?? ''
      response = await get(server.url, { table: 'disk_rows', offset, handle }, {}, BRAND)
    }
    for (const refused of [response, await get(server.url, { table: 'disk_rows', offset: '-1' }, {}, BRAND)]) {
      expect(refused.status).toBe(413)
      expect(refused.body).toMatchObject({
        code: 'shape_too_large',
        limit: MAX_DISK,
        message: expect.stringMatching(/disk budget of 1\.5 MiB \(--max-disk\)/)
      })
    }
    await expect.poll(used).toBeLessThanOrEqual(MAX_DISK)
    expect((await fetch(`${server.url}/v1/health`)).status).toBe(200)
    // a shape that fits is still served
    const fits = await syncToEnd(server.url, { table: 'disk_rows', where: 'id <= 10' }, BRAND)
    expect(fits.messages.filter((message) => 'operation' in message.headers)).toHaveLength(10)
  })
})
