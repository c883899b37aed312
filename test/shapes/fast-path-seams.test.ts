import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises'
import { createServer } from 'node:http'
import { type AddressInfo, connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { type ShapeInput, resolveDefinition } from '../../src/main/shapes/definition/definition'
import { setSessionSettingsSql } from '../../src/main/shapes/definition/row-sql'
import { readTableInfo } from '../../src/main/shapes/definition/table-info'
import { protocolHeaderNames } from '../../src/shared/protocol'
import { Responder } from '../../src/main/shapes/http/responder'
import { reusedReadSocket } from '../../src/main/shapes/snapshot/reused-read-socket'
import { type SnapshotQuery, runSnapshot } from '../../src/main/shapes/snapshot/snapshot'
import { loadParser } from '../../src/main/sql'
import { useTestDatabase } from '../support/test-database'

/**
 * Values each fast path has to get right: NULLs, escapes, unicode, arrays, jsonb, numerics, timestamps, and rows longer
 * than the encoder takes at once.
 */
const AWKWARD = `
CREATE TABLE awkward (
  id text PRIMARY KEY, note text, flag boolean, amount numeric, ratio float8, tags text[], grid int[][], doc jsonb,
  at timestamptz, day date, span interval, raw bytea, uid uuid
);
INSERT INTO awkward VALUES
  ('plain', 'hello', true, 1.50, 0.1, '{a,b}', '{{1,2},{3,4}}', '{"a": 1}', '2024-02-29 23:59:59.123456+00', '2024-02-29', '1 day 02:03:04', '\\x00ff', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
  ('nulls', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  ('a/b//c', E'tab\\there\\nnew line\\r\\\\ back "quoted" \\b\\f', false, 'NaN', 'Infinity', '{NULL,"with \\"quote\\"","comma,inside","back\\\\slash",""}', '{}', '{"nested": {"x": [1, null, "\\u00e9"]}, "s": "\\"\\\\"}', 'infinity', '-infinity', '-1 year -2 mons', '\\x', '00000000-0000-0000-0000-000000000000'),
  ('unicode ☃ é 𝄞', 'ünïcødé ✓ 漢字 🎉 עברית e\u0301', true, -123456789012345678901234567890.123456789, -0, '{ä,"ß 🎉"}', '{{-1,NULL}}', '["ü", "🎉", "\\u0001"]', '0044-03-15 12:00:00+00 BC', '0001-01-01', 'PT0S', '\\xdeadbeef', NULL),
  ('controls', E'vertical\\vtab and bell\\x07 and esc\\x1b', NULL, 0.000000000000000000001, 1e-300, '{"\\\\N","\\t"}', NULL, '{"k": "\\t\\n"}', '1970-01-01 00:00:00+00', NULL, '-00:00:01', NULL, NULL);
INSERT INTO awkward SELECT 'row ' || g, repeat(E'x\\t"é/', g % 50), g % 3 = 0, g / 7.0, g * 1.1, ARRAY['t' || g, NULL], ARRAY[[g, -g]], jsonb_build_object('g', g, 'half', g / 2.0),
  timestamptz '2000-01-01 00:00:00+00' + g * interval '1 second 1 microsecond', date '2000-01-01' + g, g * interval '1 minute', decode(lpad(to_hex(g), 8, '0'), 'hex'), NULL
  FROM generate_series(1, 6000) g;
INSERT INTO awkward (id, note, doc) SELECT 'long ' || g, repeat('ab"/', 80000 + g), jsonb_build_object('g', repeat('x', 300000))
  FROM generate_series(1, 3) g;
`

// the shape service's sockets: one read buffer, reused for every read
const database = useTestDatabase([AWKWARD], { pool: { stream: reusedReadSocket } })

type Message = { key?: string; value?: Record<string, string | null> }

/** Every row's values as Postgres formats them under the display settings, booleans as the protocol writes them. */
async function postgresText(where: string | null): Promise<Map<string, Record<string, string | null>>> {
  const client = await database.pool.connect()
  try {
    await client.query('BEGIN')
    await client.query(setSessionSettingsSql())
    const { rows } = await client.query<Record<string, string | null>>({
      text: `SELECT * FROM awkward${where ? ` WHERE ${where}` : ''}`,
      types: { getTypeParser: () => (value: string) => value }
    })
    await client.query('COMMIT')
    return new Map(
      rows.map((row) => [
        row.id as string,
        { ...row, flag: row.flag === null ? null : row.flag === 't' ? 'true' : 'false' }
      ])
    )
  } finally {
    client.release()
  }
}

const input = (where: string | null): ShapeInput => ({
  table: 'awkward',
  columns: null,
  queryableColumns: null,
  where,
  params: {},
  replica: 'default',
  log: 'full'
})

/** The snapshot's chunk files, each as written, for one way of reading its rows. */
async function snapshotFiles(where: string | null, rowPath: SnapshotQuery['rowPath']): Promise<Buffer[]> {
  await loadParser()
  const definition = await resolveDefinition(input(where), (schema, name) => readTableInfo(database.pool, schema, name))
  const dir = await mkdtemp(join(tmpdir(), 'seams-'))
  try {
    const info = await runSnapshot(
      database.pool,
      dir,
      64 * 1024,
      { definition, withRows: true, rowPath },
      { onSnapshot: () => undefined, onChunk: (_, __, body) => body.release() }
    )
    const names = (await readdir(dir)).sort((a, b) => Number(/\d+/.exec(a)?.[0]) - Number(/\d+/.exec(b)?.[0]))
    // the snapshot-end message names the transaction's xids, which differ between the two runs
    const end = JSON.stringify({
      headers: { control: 'snapshot-end', xmin: info.xmin, xmax: info.xmax, xip_list: info.xipList }
    })
    return Promise.all(
      names.map(async (name) => Buffer.from((await readFile(join(dir, name), 'utf8')).replace(end, '<end>')))
    )
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

describe('the snapshot fast path (COPY off the socket, WebAssembly encoder) beside the plain one (query, general encoder)', () => {
  for (const where of [null, "id LIKE 'row 1%' OR id IN ('plain', 'nulls', 'a/b//c', 'unicode ☃ é 𝄞', 'controls')"]) {
    it(`writes the same chunk files byte for byte (where ${where ?? 'none'})`, async () => {
      const [fast, plain] = [await snapshotFiles(where, 'copy'), await snapshotFiles(where, 'plain')]
      expect(fast.length).toBeGreaterThan(2)
      expect(fast.map((file) => file.length)).toEqual(plain.map((file) => file.length))
      fast.forEach((file, index) => expect(file.equals(plain[index] as Buffer), `chunk ${index}`).toBe(true))
      const values = new Map(
        fast.flatMap((file) =>
          (JSON.parse(String(file).replace('<end>', '{}')) as Message[])
            .filter((m) => m.key)
            .map((m) => [m.key, m.value])
        )
      )
      for (const [id, row] of await postgresText(where))
        expect(values.get(`"public"."awkward"/"${id.replaceAll('/', '//')}"`), id).toEqual(row)
    })
  }
})

/** The raw bytes of the response to one keep-alive GET of `path`, its Date value blanked (the second may turn). */
async function rawResponse(port: number, path: string): Promise<string> {
  const socket = connect(port, '127.0.0.1')
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://localhost:5173\r\n\r\n`)
  let text = ''
  for await (const chunk of socket as AsyncIterable<Buffer>) {
    text += chunk.toString('latin1')
    const headEnd = text.indexOf('\r\n\r\n')
    const length = Number(/content-length: (\d+)/i.exec(text)?.[1])
    if (headEnd !== -1 && text.length >= headEnd + 4 + length) break
  }
  socket.destroy()
  return text.replace(/\r\nDate: [^\r]+/, '\r\nDate: <date>')
}

describe('a whole response written to the socket at once, beside Node writing it', () => {
  it('puts the same bytes on the wire', async () => {
    const answer = {
      headers: ['content-type', 'application/json; charset=utf-8', 'etag', '"1-2-3"', 'content-length', '9'],
      body: Buffer.from('[{"a":1}]')
    }
    const server = createServer((req, res) => {
      const r = new Responder(req, res, protocolHeaderNames('electric'), '/v1/shape', 'Syncscope/test')
      const prepared = {
        headers: r.flatHeaders({ 'content-type': 'application/json; charset=utf-8', etag: '"1-2-3"' }, answer.body),
        body: answer.body
      }
      if (req.url === '/wire') r.sendPrepared(prepared)
      else r.sendFlat(200, prepared.headers, prepared.body)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = server.address() as AddressInfo
      const plain = await rawResponse(port, '/plain')
      expect(plain).toContain('\r\n\r\n[{"a":1}]')
      expect(await rawResponse(port, '/wire')).toBe(plain)
    } finally {
      server.close()
    }
  })
})
