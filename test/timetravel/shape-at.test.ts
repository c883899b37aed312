import { createHash } from 'node:crypto'
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { shapeMain } from '../../src/main/cli/shape'
import { findShapeFolder, readShapeFolder } from '../../src/main/timetravel/local-files'
import type { LogRecord } from '../../src/main/timetravel/log'
import type { LogEntry, RowsAt, ShapeDiff } from '../../src/shared/contract/timetravel'
import { describeWith } from '../support/facility-tests'
import { SOUND, startNginx, type RunningNginx } from '../support/nginx'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { FollowingClient, expectOneLine, jsonOf, rowsByKey, runMain } from './support'

interface LogOutput {
  log: { source: { kind: string }; handle: string; end: string; complete: boolean }
  entries: LogEntry[]
}

const key = (table: string, id: number) => `"public"."${table}"/"${id}"`

/** Each file of a folder: its size, modification time and content hash. */
async function filesOf(dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {}
  for (const name of (await readdir(dir)).sort()) {
    const info = await stat(join(dir, name))
    const hash = createHash('sha256')
      .update(await readFile(join(dir, name)))
      .digest('hex')
    files[name] = `${info.size} ${info.mtimeMs} ${hash}`
  }
  return files
}

describe('syncscope shape at / diff / log: time travel through a shape log', () => {
  let server: TestShapeServer
  let dir: string
  let tables = 0

  beforeAll(async () => {
    server = await startTestShapeServer({ longPollTimeout: 1_000 })
    dir = await mkdtemp(join(tmpdir(), 'syncscope-timetravel-'))
  })
  afterAll(async () => {
    await server?.close()
    await rm(dir, { recursive: true, force: true })
  })

  async function table(): Promise<string> {
    const name = `tt_items_${++tables}`
    await server.pool.query(
      `CREATE TABLE ${name} (id int PRIMARY KEY, title text NOT NULL, done boolean NOT NULL DEFAULT false)`
    )
    await server.pool.query(`INSERT INTO ${name} (id, title) VALUES (1, 'one'), (2, 'two'), (3, 'three')`)
    return name
  }

  /** A table with three changes after the snapshot, followed by a client that remembers its rows after each batch. */
  async function history(name: string): Promise<FollowingClient> {
    const client = new FollowingClient(`${server.url}/v1/shape`, { table: name })
    await client.start()
    await server.pool.query(`UPDATE ${name} SET title = 'one, edited' WHERE id = 1`)
    await client.until((rows) => rows.get(key(name, 1))?.title === 'one, edited', 'the update')
    await server.pool.query(
      `BEGIN; DELETE FROM ${name} WHERE id = 2; INSERT INTO ${name} (id, title) VALUES (4, 'four'); UPDATE ${name} SET done = true WHERE id = 3; COMMIT`
    )
    await client.until((rows) => rows.has(key(name, 4)) && !rows.has(key(name, 2)), 'the second transaction')
    client.stop()
    return client
  }

  const at = (url: string, offset: string, ...flags: string[]) =>
    runMain(shapeMain, ['at', url, '--offset', offset, '--data-dir', server.dataDir, '--json', ...flags])

  it('the rows at every offset a client stood at are what that client held there, read from the files and over HTTP alike', async () => {
    const name = await table()
    const client = await history(name)
    const url = `${server.url}/v1/shape?table=${name}`

    const listed = jsonOf<LogOutput>(await runMain(shapeMain, ['log', url, '--data-dir', server.dataDir, '--json']))
    expect(listed.log.source.kind).toBe('local-files')
    expect(listed.log.complete).toBe(true)
    expect(listed.entries.map((entry) => [entry.kind, entry.operation ?? entry.name])).toEqual([
      ['change', 'insert'],
      ['change', 'insert'],
      ['change', 'insert'],
      ['control', 'snapshot-end'],
      ['change', 'update'],
      ['change', 'delete'],
      ['change', 'insert'],
      ['change', 'update']
    ])
    expect(listed.entries.every((entry) => entry.exact)).toBe(true)

    expect(client.held.size).toBeGreaterThanOrEqual(3)
    for (const [offset, rows] of client.held) {
      const fromFiles = jsonOf<{ at: RowsAt }>(await at(url, offset)).at
      expect(rowsByKey(fromFiles.rows), `from the files at ${offset}`).toEqual(rows)
      const overHttp = jsonOf<{ log: { source: { kind: string } }; at: RowsAt }>(await at(url, offset, '--over-http'))
      expect(overHttp.log.source.kind).toBe('http')
      expect(rowsByKey(overHttp.at.rows), `over HTTP at ${offset}`).toEqual(rows)
    }

    const end = jsonOf<{ at: RowsAt }>(await at(url, listed.log.end)).at
    const one = end.rows.find((row) => row.key === key(name, 1))
    const update = listed.entries[4] as LogEntry
    expect(one?.origins.map((origin) => [origin.operation, origin.offset, origin.columns])).toEqual([
      ['insert', '0_0', ['id', 'title', 'done']],
      ['update', update.offset, ['title']]
    ])
    expect(one?.origins[1]?.txids).toEqual(update.txids)
  })

  it('a diff names the rows added, removed and changed between two offsets, each with its messages', async () => {
    const name = await table()
    await history(name)
    const url = `${server.url}/v1/shape?table=${name}`
    const { log } = jsonOf<LogOutput>(await runMain(shapeMain, ['log', url, '--data-dir', server.dataDir, '--json']))
    const changes = jsonOf<{ diff: ShapeDiff }>(
      await runMain(shapeMain, ['at', url, '--from', '0_inf', '--to', log.end, '--data-dir', server.dataDir, '--json'])
    ).diff
    expect(changes.changes.map((change) => [change.key, change.kind, change.columns])).toEqual([
      [key(name, 1), 'changed', ['title']],
      [key(name, 2), 'removed', ['id', 'title', 'done']],
      [key(name, 4), 'added', ['id', 'title', 'done']],
      [key(name, 3), 'changed', ['done']]
    ])
    expect(changes.changes[1]?.messages.map((message) => message.operation)).toEqual(['delete'])
    const text = await runMain(shapeMain, [
      'diff',
      url,
      '--from',
      '0_inf',
      '--to',
      log.end,
      '--data-dir',
      server.dataDir
    ])
    expect(text.code).toBe(0)
    expect(text.out).toContain(`~ ${key(name, 1)}`)
    expect(text.out).toContain(`title: "one" → "one, edited"`)
    // the other way round, the same rows with the kinds reversed
    const back = jsonOf<{ diff: ShapeDiff }>(
      await runMain(shapeMain, [
        'diff',
        url,
        '--from',
        log.end,
        '--to',
        '0_inf',
        '--data-dir',
        server.dataDir,
        '--json'
      ])
    ).diff
    expect(back.changes.find((change) => change.key === key(name, 4))?.kind).toBe('removed')
  })

  it('a subquery shape at each offset: move-out takes rows out, move-in brings them back, each row naming its messages', async () => {
    const suffix = ++tables
    const projects = `tt_projects_${suffix}`
    const tasks = `tt_tasks_${suffix}`
    await server.pool.query(`CREATE TABLE ${projects} (id int PRIMARY KEY, archived boolean NOT NULL DEFAULT false)`)
    await server.pool.query(`CREATE TABLE ${tasks} (id int PRIMARY KEY, project_id int, title text)`)
    await server.pool.query(`INSERT INTO ${projects} VALUES (1, false), (2, false)`)
    await server.pool.query(`INSERT INTO ${tasks} VALUES (10, 1, 'a'), (11, 1, 'b'), (20, 2, 'c')`)
    const where = `project_id IN (SELECT id FROM ${projects} WHERE NOT archived)`
    const client = new FollowingClient(`${server.url}/v1/shape`, { table: tasks, where })
    await client.start()
    await server.pool.query(`UPDATE ${projects} SET archived = true WHERE id = 1`)
    await client.until((rows) => !rows.has(key(tasks, 10)), 'the move-out')
    await server.pool.query(`UPDATE ${projects} SET archived = false WHERE id = 1`)
    await client.until((rows) => rows.has(key(tasks, 10)), 'the move-in')
    client.stop()
    const url = `${server.url}/v1/shape?table=${tasks}&where=${encodeURIComponent(where)}`
    const { entries, log } = jsonOf<LogOutput>(
      await runMain(shapeMain, ['log', url, '--data-dir', server.dataDir, '--json'])
    )
    expect(log.source.kind).toBe('local-files')
    const moveOut = entries.find((entry) => entry.name === 'move-out') as LogEntry
    expect(moveOut.exact).toBe(true)
    for (const [offset, rows] of client.held) {
      const fromFiles = jsonOf<{ at: RowsAt }>(await at(url, offset)).at
      expect(rowsByKey(fromFiles.rows), `at ${offset}`).toEqual(rows)
      expect(fromFiles.uncertain).toEqual([])
      // A catch-up over HTTP gets the events and move-in rows (no position of their own) in one response: inside
      // it they cannot be placed, and the answer names them instead of guessing.
      const overHttp = jsonOf<{ at: RowsAt }>(await at(url, offset, '--over-http')).at
      if (overHttp.uncertain.length === 0) expect(rowsByKey(overHttp.rows), `over HTTP at ${offset}`).toEqual(rows)
      else expect(overHttp.uncertain.map((entry) => entry.name ?? entry.operation)).toContain('move-out')
    }
    const httpEnd = jsonOf<{ at: RowsAt }>(await at(url, log.end, '--over-http')).at
    expect(rowsByKey(httpEnd.rows)).toEqual(rowsByKey(jsonOf<{ at: RowsAt }>(await at(url, log.end)).at.rows))
    const out = jsonOf<{ diff: ShapeDiff }>(
      await runMain(shapeMain, [
        'diff',
        url,
        '--from',
        '0_inf',
        '--to',
        moveOut.offset,
        '--data-dir',
        server.dataDir,
        '--json'
      ])
    ).diff
    expect(out.changes.map((change) => [change.key, change.kind, change.messages.map((m) => m.operation)])).toEqual([
      [key(tasks, 10), 'removed', ['move-out']],
      [key(tasks, 11), 'removed', ['move-out']]
    ])
    const back = jsonOf<{ at: RowsAt }>(await at(url, log.end)).at
    expect(back.rows.find((row) => row.key === key(tasks, 10))?.origins.map((origin) => origin.operation)).toEqual([
      'move-in'
    ])
  })

  it('bad input is one line and exit code 2: an offset outside the log, not an offset, no such table, nothing listening, a file that is no bundle', async () => {
    const name = await table()
    const url = `${server.url}/v1/shape?table=${name}`
    const { log } = jsonOf<LogOutput>(await runMain(shapeMain, ['log', url, '--data-dir', server.dataDir, '--json']))
    expectOneLine(
      await at(url, '99999999999999_0'),
      new RegExp(`offset 99999999999999_0 is outside the log: it ends at ${log.end}`)
    )
    expectOneLine(await at(url, 'yesterday'), /"yesterday" is not a log offset/)
    expectOneLine(
      await at(`${server.url}/v1/shape?table=no_such_table`, '0_0'),
      /HTTP 400: .*no_such_table.* does not exist/
    )
    expectOneLine(
      await at('http://127.0.0.1:9/v1/shape?table=items', '0_0', '--over-http'),
      /127\.0\.0\.1:9.*(retries)/
    )
    expectOneLine(await at('http://127.0.0.1:9/v1/shape', '0_0'), /names no `table`/)
    const har = join(dir, 'other.har')
    await writeFile(har, JSON.stringify({ log: { entries: [] } }))
    expectOneLine(await at(har, '0_0'), /other\.har is neither a shape URL .* nor a Syncscope bundle/)
    const cut = join(dir, 'cut.json')
    await writeFile(cut, '{"format":"syncscope-bundle","version":1,"log":{"records":[')
    expectOneLine(await at(cut, '0_0'), /cut\.json is not JSON .*cut short/)
    expect((await runMain(shapeMain, ['at', url])).code).toBe(2)
  })

  it("reads a live server's files while it appends to them, each read a whole prefix of the log, and changes nothing", async () => {
    const name = await table()
    const client = new FollowingClient(`${server.url}/v1/shape`, { table: name })
    await client.start()
    client.stop()
    const handle = client.shape.stream.current.handle as string
    const dir = findShapeFolder(server.dataDir, handle) as string
    const writes = (async () => {
      for (let round = 0; round < 60; round++)
        await server.pool.query(`UPDATE ${name} SET title = 'round ${round}' WHERE id = ${1 + (round % 3)}`)
    })()
    const reads: LogRecord[][] = []
    while (reads.length < 40) {
      reads.push((await readShapeFolder(dir)).records)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    await writes
    const last = new FollowingClient(`${server.url}/v1/shape`, { table: name })
    await last.start()
    await last.until((rows) => rows.get(key(name, 3))?.title === 'round 59', 'the last update')
    last.stop()
    const before = await filesOf(dir)
    const final = (await readShapeFolder(dir)).records
    expect(final.length).toBe(4 + 60)
    expect(new Set(reads.map((read) => read.length)).size, 'reads at different lengths').toBeGreaterThan(1)
    for (const read of reads) expect(read).toEqual(final.slice(0, read.length))
    expect(await filesOf(dir)).toEqual(before)
  })

  describeWith(['nginx'], 'behind nginx', () => {
    let nginx: RunningNginx
    beforeAll(async () => {
      nginx = await startNginx(server.url, SOUND)
    })
    afterAll(async () => nginx?.close())

    it('through a caching proxy the log reads the same: the server header still leads to the files, --over-http follows through the cache', async () => {
      const name = await table()
      const client = await history(name)
      const url = `${nginx.url}/v1/shape?table=${name}`
      const listed = jsonOf<LogOutput>(await runMain(shapeMain, ['log', url, '--data-dir', server.dataDir, '--json']))
      expect(listed.log.source.kind).toBe('local-files')
      for (const [offset, rows] of client.held) {
        expect(rowsByKey(jsonOf<{ at: RowsAt }>(await at(url, offset)).at.rows)).toEqual(rows)
        const overHttp = jsonOf<{ log: { source: { kind: string; description: string } }; at: RowsAt }>(
          await at(url, offset, '--over-http')
        )
        expect(overHttp.log.source.description).toContain(nginx.url)
        expect(rowsByKey(overHttp.at.rows)).toEqual(rows)
      }
    })
  })
})
