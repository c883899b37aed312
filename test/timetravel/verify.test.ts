import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { verifyMain } from '../../src/main/cli/verify'
import type { VerifyReport } from '../../src/shared/contract/timetravel'
import { endCliRuns, runCli } from '../support/cli-process'
import { describeWith } from '../support/facility-tests'
import { SOUND, startNginx, type RunningNginx } from '../support/nginx'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { startTap } from '../../src/main/doctor/tap'
import { faults, key, recordFaultySession, tamper } from './faults'
import { FollowingClient, expectOneLine, jsonOf, runMain } from './support'

describe('syncscope verify: a recorded client against the server log and Postgres', () => {
  let server: TestShapeServer
  let dir: string
  let tables = 0

  beforeAll(async () => {
    server = await startTestShapeServer({ longPollTimeout: 1_000 })
    dir = await mkdtemp(join(tmpdir(), 'syncscope-verify-'))
  })
  afterAll(async () => {
    await endCliRuns()
    await server?.close()
    await rm(dir, { recursive: true, force: true })
  })

  const recordSession = (upstream: string) =>
    recordFaultySession({ upstream, dir, name: `vt_${++tables}`, query: (sql) => server.pool.query(sql) })

  async function verify(text: string, file: string, ...flags: string[]) {
    const path = join(dir, file)
    await writeFile(path, text)
    return runMain(verifyMain, [path, '--database', server.databaseUrl, '--json', ...flags])
  }

  it("an untouched recording (the tap's HAR, the workbench session) holds what Postgres holds: exit 0", async () => {
    const { har, session } = await recordSession(server.url)
    const report = jsonOf<VerifyReport>(await verify(har, 'clean.har', '--data-dir', server.dataDir))
    expect(report.verdict).toBe('equal')
    const [shape] = report.shapes
    expect(shape?.log.kind).toBe('local-files')
    expect(shape?.anomalies).toEqual([])
    expect(shape?.rows).toEqual([])
    expect(shape?.counts).toEqual({ client: 4, postgres: 4, log: 4 })
    const workbench = jsonOf<VerifyReport>(await verify(session, 'session.json', '--data-dir', server.dataDir))
    expect(workbench.source.kind).toBe('recording')
    expect(workbench.verdict).toBe('equal')
    // without the server's files, its log is followed again over HTTP (the same handle)
    const followed = jsonOf<VerifyReport>(await verify(har, 'clean.har', '--over-http'))
    expect(followed.shapes[0]?.log.kind).toBe('http')
    expect(followed.verdict).toBe('equal')
  })

  it('the built CLI, a process of its own, verifies and traces as the functions do', async () => {
    const { name, har } = await recordSession(server.url)
    const file = join(dir, 'cli.har')
    await writeFile(file, har)
    const run = runCli(['verify', file, '--database', server.databaseUrl, '--data-dir', server.dataDir])
    expect(await run.exited, run.output().stderr).toBe(0)
    expect(run.output().stdout).toContain(`${name}  handle`)
    expect(run.output().stdout).toContain('equal: the client holds what Postgres holds')
    const txid = (await server.pool.query<{ txid: string }>('SELECT pg_current_xact_id()::text AS txid')).rows[0]?.txid
    const traced = runCli([
      'txid',
      String(txid),
      '--shape',
      `${server.url}/v1/shape?table=${name}&where=${encodeURIComponent('id > 0')}`,
      '--database',
      server.databaseUrl,
      '--data-dir',
      server.dataDir
    ])
    // a shape of this where begins now, after the id was taken: its snapshot covers it
    expect(await traced.exited, traced.output().stderr).toBe(0)
    expect(traced.output().stdout).toMatch(/✓ covered\n {4}the shape's snapshot ending at 0_0/)
  })

  it('one message dropped, one duplicated and two reordered: each named with its message, and the rows they made wrong', async () => {
    const { name, har } = await recordSession(server.url)
    const { dropped, duplicated, reordered } = faults(har, name)
    const droppedReport = jsonOf<VerifyReport>(await verify(dropped, 'dropped.har', '--data-dir', server.dataDir), 1)
    const [lost] = droppedReport.shapes[0]?.anomalies ?? []
    expect(lost).toMatchObject({ kind: 'dropped', entry: { key: key(name, 2), operation: 'update' } })
    expect(lost?.text).toMatch(
      new RegExp(
        `the update of "public"\\."${name}"/"2" at \\d+_0 \\(txid \\d+\\) is in the log but never arrived \\(request #\\d+`
      )
    )
    const row2 = droppedReport.shapes[0]?.rows.find((row) => row.key === key(name, 2))
    expect(row2).toMatchObject({
      kind: 'different',
      columns: ['title'],
      client: { title: 'two' },
      postgres: { title: 'two, late' }
    })
    expect(row2?.cause).toMatch(/^dropped: the update of .* never arrived/)

    const duplicatedReport = jsonOf<VerifyReport>(
      await verify(duplicated, 'duplicated.har', '--data-dir', server.dataDir),
      1
    )
    expect(duplicatedReport.shapes[0]?.anomalies.map((anomaly) => [anomaly.kind, anomaly.entry.key])).toEqual([
      ['duplicated', key(name, 5)]
    ])
    expect(duplicatedReport.shapes[0]?.anomalies[0]?.text).toMatch(
      /the insert of .*"5" at \d+_0 \(txid \d+\) arrived twice \(request #\d+\)/
    )

    const reorderedReport = jsonOf<VerifyReport>(
      await verify(reordered, 'reordered.har', '--data-dir', server.dataDir),
      1
    )
    const shape = reorderedReport.shapes[0]
    expect(shape?.anomalies.map((anomaly) => anomaly.kind)).toEqual(['reordered'])
    expect(shape?.anomalies[0]?.text).toMatch(
      /the update of .*"3" at \d+_(0|2) \(txid \d+\) \(request #\d+\) arrived (after|before) the update of .*"3" at \d+_(0|2) \(txid \d+\), which the log has (after|before) it/
    )
    const row3 = shape?.rows.find((row) => row.key === key(name, 3))
    expect(row3).toMatchObject({
      kind: 'different',
      client: { title: 'three, first' },
      postgres: { title: 'three, second' }
    })
    expect(row3?.cause).toMatch(/^reordered: /)

    // the text report says the same in lines
    const text = await runMain(verifyMain, [
      join(dir, 'dropped.har'),
      '--database',
      server.databaseUrl,
      '--data-dir',
      server.dataDir
    ])
    expect(text.code).toBe(1)
    expect(text.out).toContain('✗ dropped: the update of')
    expect(text.out).toContain('DIVERGED')
  })

  it('rows changed after the recording ended are told apart from divergences: exit 0, each named with the later message', async () => {
    const { name, har } = await recordSession(server.url)
    await server.pool.query(`UPDATE ${name} SET title = 'one, later' WHERE id = 1`)
    const client = new FollowingClient(`${server.url}/v1/shape`, { table: name })
    await client.start()
    await client.until((rows) => rows.get(key(name, 1))?.title === 'one, later', 'the later update in the log')
    client.stop()
    const report = jsonOf<VerifyReport>(await verify(har, 'later.har', '--data-dir', server.dataDir))
    expect(report.shapes[0]?.verdict).toBe('changed-since')
    expect(report.shapes[0]?.rows).toMatchObject([{ key: key(name, 1), kind: 'changed-since' }])
    expect(report.shapes[0]?.rows[0]?.cause).toMatch(
      /^changed after the recording ended: update at \d+_0 \(title\) txid \d+/
    )
  })

  it('a subquery shape is materialised with its tags and move events: a dropped move-out leaves rows Postgres no longer has', async () => {
    const suffix = ++tables
    const projects = `vt_projects_${suffix}`
    const tasks = `vt_tasks_${suffix}`
    await server.pool.query(`CREATE TABLE ${projects} (id int PRIMARY KEY, archived boolean NOT NULL DEFAULT false)`)
    await server.pool.query(`CREATE TABLE ${tasks} (id int PRIMARY KEY, project_id int, title text)`)
    await server.pool.query(`INSERT INTO ${projects} VALUES (1, false), (2, false)`)
    await server.pool.query(`INSERT INTO ${tasks} VALUES (10, 1, 'a'), (11, 1, 'b'), (20, 2, 'c')`)
    const harFile = join(dir, `${tasks}.har`)
    const tap = await startTap({ upstream: server.url, host: '127.0.0.1', port: 0, out: harFile })
    const where = `project_id IN (SELECT id FROM ${projects} WHERE NOT archived)`
    const client = new FollowingClient(`${tap.url}/v1/shape`, { table: tasks, where })
    try {
      await client.start()
      await server.pool.query(`UPDATE ${projects} SET archived = true WHERE id = 1`)
      await client.until((rows) => !rows.has(key(tasks, 10)), 'the move-out')
    } finally {
      client.stop()
      await tap.close()
    }
    const har = await readFile(harFile, 'utf8')
    expect(jsonOf<VerifyReport>(await verify(har, 'moves.har', '--data-dir', server.dataDir)).verdict).toBe('equal')
    const withoutMoveOut = tamper(har, (messages) => {
      const at = messages.findIndex((message) => message.headers.event === 'move-out')
      return at === -1 ? null : messages.filter((_, index) => index !== at)
    })
    const report = jsonOf<VerifyReport>(
      await verify(withoutMoveOut, 'no-move-out.har', '--data-dir', server.dataDir),
      1
    )
    const shape = report.shapes[0]
    expect(shape?.anomalies.map((anomaly) => [anomaly.kind, anomaly.entry.name])).toEqual([['dropped', 'move-out']])
    expect(shape?.anomalies[0]?.text).toMatch(
      /the move-out event at \d+_\d+ \(txid \d+\) is in the log but never arrived/
    )
    expect(shape?.rows.map((row) => [row.key, row.kind])).toEqual([
      [key(tasks, 10), 'extra'],
      [key(tasks, 11), 'extra']
    ])
    expect(shape?.rows[0]?.cause).toMatch(
      /^dropped: the move-out event at \d+_\d+ \(txid \d+\) is in the log but never arrived .* — the client has id="10" .*, Postgres has no such row$/
    )
  })

  it('a file it cannot read, or no database to compare with, is one line and exit code 2', async () => {
    const other = JSON.stringify({
      log: {
        entries: [
          {
            startedDateTime: new Date().toISOString(),
            request: { method: 'GET', url: 'https://example.com/api/items', headers: [] },
            response: { status: 200, headers: [], content: { text: '[]' } }
          }
        ]
      }
    })
    expectOneLine(await verify(other, 'other.har'), /other\.har holds no shape requests/)
    expectOneLine(await verify('{"log": {"entries": [{"startedDateTime": "2026', 'cut.har'), /not JSON/)
    const { har } = await recordSession(server.url)
    await writeFile(join(dir, 'plain.har'), har)
    expectOneLine(
      await runMain(verifyMain, [join(dir, 'plain.har')]),
      /give the Postgres to compare with \(--database URL\)/
    )
    expectOneLine(
      await runMain(verifyMain, [join(dir, 'plain.har'), '--database', 'postgres://nobody@127.0.0.1:9/none']),
      /cannot connect to postgres:\/\/nobody@127\.0\.0\.1:9\/none/
    )
  })

  describeWith(['nginx'], 'behind nginx', () => {
    let nginx: RunningNginx
    beforeAll(async () => {
      nginx = await startNginx(server.url, SOUND)
    })
    afterAll(async () => nginx?.close())

    it('a client recorded through nginx: the dropped, duplicated and reordered messages are named, the log read again through the cache', async () => {
      const { name, har } = await recordSession(nginx.url)
      expect(jsonOf<VerifyReport>(await verify(har, 'nginx.har', '--over-http')).verdict).toBe('equal')
      for (const [kind, text] of Object.entries(faults(har, name))) {
        const report = jsonOf<VerifyReport>(await verify(text, `nginx-${kind}.har`, '--over-http'), 1)
        expect(report.shapes[0]?.log).toMatchObject({ kind: 'http', description: expect.stringContaining(nginx.url) })
        expect(report.shapes[0]?.anomalies.map((anomaly) => anomaly.kind)).toEqual([kind])
      }
    })
  })
})
