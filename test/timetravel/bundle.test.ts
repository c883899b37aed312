import { createHash } from 'node:crypto'
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bundleMain } from '../../src/main/cli/bundle'
import { shapeMain } from '../../src/main/cli/shape'
import { txidMain } from '../../src/main/cli/txid'
import { verifyMain } from '../../src/main/cli/verify'
import { startTap } from '../../src/main/doctor/tap'
import type { RowsAt, TxidReport, VerifyReport } from '../../src/shared/contract/timetravel'
import { startTestShapeServer, type TestShapeServer } from '../support/shape-server'
import { FollowingClient, expectOneLine, jsonOf, runMain } from './support'

const SECRET = 'shape-secret-4f9a1c'
const API_KEY = 'ak_live_0123456789abcdef'
const key = (id: number) => `"public"."bundled"/"${id}"`

interface Bundle {
  format: string
  recording: { log: { entries: Array<{ response: { content: { text: string } } }> } }
}

describe('syncscope bundle: a repro bundle exported, then opened read-only without the server', () => {
  let server: TestShapeServer
  let dir: string
  let bundleFile: string
  let txid: string
  let end: string

  beforeAll(async () => {
    server = await startTestShapeServer({ longPollTimeout: 1_000, secret: SECRET })
    dir = await mkdtemp(join(tmpdir(), 'syncscope-bundle-'))
    await server.pool.query('CREATE TABLE bundled (id int PRIMARY KEY, title text NOT NULL, api_key text)')
    await server.pool.query(`INSERT INTO bundled VALUES (1, 'one', '${API_KEY}'), (2, 'two', NULL)`)
    const harFile = join(dir, 'session.har')
    const tap = await startTap({ upstream: server.url, host: '127.0.0.1', port: 0, out: harFile })
    const client = new FollowingClient(`${tap.url}/v1/shape`, { table: 'bundled', secret: SECRET })
    await client.start()
    const writer = await server.pool.connect()
    await writer.query('BEGIN')
    await writer.query(`UPDATE bundled SET title = 'two, edited' WHERE id = 2`)
    txid = (await writer.query<{ txid: string }>('SELECT pg_current_xact_id()::text AS txid')).rows[0]?.txid as string
    await writer.query('COMMIT')
    writer.release()
    await client.until((rows) => rows.get(key(2))?.title === 'two, edited', 'the update')
    client.stop()
    await tap.close()
    bundleFile = join(dir, 'repro.json')
    const exported = await runMain(bundleMain, [
      'export',
      `${server.url}/v1/shape?table=bundled&secret=${SECRET}`,
      '--out',
      bundleFile,
      '--recording',
      harFile,
      '--database',
      server.databaseUrl,
      '--data-dir',
      server.dataDir
    ])
    expect(exported.code, exported.err).toBe(0)
    expect(exported.out).toMatch(
      /Bundle\s+.*repro\.json {2}\(\d+ messages, session\.har, 2 Postgres row\(s\); secrets masked\)/
    )
  })
  afterAll(async () => {
    await server?.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('holds the log, the recording and the rows, with the secret and the secret column masked, private to its owner', async () => {
    const text = await readFile(bundleFile, 'utf8')
    expect((await stat(bundleFile)).mode & 0o777).toBe(0o600)
    expect(text).not.toContain(SECRET)
    expect(text).not.toContain(API_KEY)
    expect(text).toContain('•••')
    const opened = await runMain(bundleMain, ['open', bundleFile, '--json'])
    const summary = jsonOf<{
      recording: { kind: string }
      postgres: { rows: number }
      log: { source: { kind: string } }
    }>(opened)
    expect(summary).toMatchObject({
      recording: { kind: 'har' },
      postgres: { rows: 2 },
      log: { source: { kind: 'bundle' } }
    })
    end = (summary.log as unknown as { end: string }).end
  })

  it('opened with the server gone: time travel, verify and the tracer read it as they read a live shape', async () => {
    await server.stop()
    const before = createHash('sha256')
      .update(await readFile(bundleFile))
      .digest('hex')
    const at = jsonOf<{ at: RowsAt }>(await runMain(shapeMain, ['at', bundleFile, '--offset', end, '--json'])).at
    expect(at.rows.map((row) => [row.key, row.value.title, row.value.api_key])).toEqual([
      [key(1), 'one', '•••'],
      [key(2), 'two, edited', null]
    ])
    const snapshotOnly = jsonOf<{ at: RowsAt }>(
      await runMain(shapeMain, ['at', bundleFile, '--offset', '0_0', '--json'])
    ).at
    expect(snapshotOnly.rows.find((row) => row.key === key(2))?.value.title).toBe('two')

    const verified = jsonOf<VerifyReport>(await runMain(verifyMain, [bundleFile, '--json']))
    expect(verified).toMatchObject({ verdict: 'equal', postgres: { kind: 'bundle' }, source: { kind: 'bundle' } })
    expect(verified.shapes[0]?.log.kind).toBe('bundle')

    const traced = jsonOf<TxidReport>(await runMain(txidMain, [txid, '--shape', bundleFile, '--json']))
    expect(traced.shapes[0]?.carriers.map((entry) => entry.key)).toEqual([key(2)])
    expect(
      createHash('sha256')
        .update(await readFile(bundleFile))
        .digest('hex')
    ).toBe(before)
  })

  it('a message dropped from the bundled recording is named by verify against the bundled log and rows', async () => {
    const bundle = JSON.parse(await readFile(bundleFile, 'utf8')) as Bundle
    for (const entry of bundle.recording.log.entries) {
      const text = entry.response.content.text
      if (!text.includes('two, edited')) continue
      const messages = JSON.parse(text) as Array<{ key?: string }>
      entry.response.content.text = JSON.stringify(messages.filter((message) => message.key !== key(2)))
    }
    const broken = join(dir, 'broken.json')
    await writeFile(broken, JSON.stringify(bundle))
    const report = jsonOf<VerifyReport>(await runMain(verifyMain, [broken, '--json']), 1)
    expect(report.shapes[0]?.anomalies.map((anomaly) => [anomaly.kind, anomaly.entry.key])).toEqual([
      ['dropped', key(2)]
    ])
    expect(report.shapes[0]?.rows.map((row) => [row.key, row.kind])).toEqual([[key(2), 'different']])
  })

  it('a damaged bundle is one line and exit code 2', async () => {
    const text = await readFile(bundleFile, 'utf8')
    const cut = join(dir, 'cut.json')
    await writeFile(cut, text.slice(0, text.length / 2))
    expectOneLine(await runMain(shapeMain, ['at', cut, '--offset', '0_0']), /cut\.json is not JSON .*cut short/)
    const other = join(dir, 'v2.json')
    await writeFile(other, text.replace('"version":1', '"version":2'))
    expectOneLine(await runMain(bundleMain, ['open', other]), /v2\.json is not a Syncscope bundle: version: /)
    expectOneLine(await runMain(verifyMain, [cut]), /not JSON/)
  })
})
