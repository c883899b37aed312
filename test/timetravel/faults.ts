import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startTap } from '../../src/main/doctor/tap'
import { toRecording } from '../../src/shared/doctor-recording'
import { FollowingClient } from './support'

type Message = { key?: string; value?: Record<string, string | null>; headers: Record<string, unknown> }
interface HarFile {
  log: { entries: Array<{ request: { url: string }; response: { content: { text: string } } }> }
}

export const key = (table: string, id: number) => `"public"."${table}"/"${id}"`

/** A recorded session with its responses' bodies rewritten: the first body `edit` changes (returns non-null for). */
export function tamper(har: string, edit: (messages: Message[]) => Message[] | null): string {
  const file = JSON.parse(har) as HarFile
  for (const entry of file.log.entries) {
    let messages: Message[]
    try {
      messages = JSON.parse(entry.response.content.text) as Message[]
    } catch {
      continue
    }
    if (!Array.isArray(messages)) continue
    const edited = edit(messages)
    if (!edited) continue
    entry.response.content.text = JSON.stringify(edited)
    return JSON.stringify(file)
  }
  throw new Error('no response body to tamper with')
}

const isChangeOf = (message: Message, rowKey: string, operation: string) =>
  message.key === rowKey && message.headers.operation === operation

/** The three faults of a session recorded by recordSession: row 2's update dropped, row 5's insert duplicated, row 3's updates swapped. */
export const faults = (har: string, name: string) => ({
  dropped: tamper(har, (messages) => {
    const at = messages.findIndex((message) => isChangeOf(message, key(name, 2), 'update'))
    return at === -1 ? null : messages.filter((_, index) => index !== at)
  }),
  duplicated: tamper(har, (messages) => {
    const insert = messages.find((message) => isChangeOf(message, key(name, 5), 'insert'))
    return insert ? [insert, ...messages] : null
  }),
  reordered: tamper(har, (messages) => {
    const first = messages.findIndex((message) => isChangeOf(message, key(name, 3), 'update'))
    if (first === -1 || !isChangeOf(messages[first + 1] as Message, key(name, 3), 'update')) return null
    const swapped = [...messages]
    ;[swapped[first], swapped[first + 1]] = [swapped[first + 1] as Message, swapped[first] as Message]
    return swapped
  })
})

/**
 * A client syncing a fresh table `name` through a real tap (in front of `upstream`), through four transactions: an
 * update of row 2, an insert of row 5, two updates of row 3 in one transaction, a delete of row 4. Returns the tap's
 * HAR and the client's own recording. `query` runs SQL on the database behind `upstream`.
 */
export async function recordFaultySession(options: {
  upstream: string
  dir: string
  name: string
  query: (sql: string) => Promise<unknown>
}): Promise<{ name: string; har: string; session: string }> {
  const { upstream, dir, name, query } = options
  await query(`CREATE TABLE ${name} (id int PRIMARY KEY, title text NOT NULL, open boolean NOT NULL DEFAULT true)`)
  await query(`INSERT INTO ${name} (id, title) VALUES (1, 'one'), (2, 'two'), (3, 'three'), (4, 'four')`)
  const harFile = join(dir, `${name}.har`)
  const tap = await startTap({ upstream, host: '127.0.0.1', port: 0, out: harFile })
  const client = new FollowingClient(`${tap.url}/v1/shape`, { table: name })
  try {
    await client.start()
    const step = async (sql: string, done: (rows: ReadonlyMap<string, Record<string, string | null>>) => boolean) => {
      await query(sql)
      await client.until(done, sql)
    }
    await step(
      `UPDATE ${name} SET title = 'two, late' WHERE id = 2`,
      (rows) => rows.get(key(name, 2))?.title === 'two, late'
    )
    await step(`INSERT INTO ${name} (id, title) VALUES (5, 'five')`, (rows) => rows.has(key(name, 5)))
    await step(
      `BEGIN; UPDATE ${name} SET title = 'three, first' WHERE id = 3; UPDATE ${name} SET title = 'three, second', open = false WHERE id = 3; COMMIT`,
      (rows) => rows.get(key(name, 3))?.title === 'three, second'
    )
    await step(`DELETE FROM ${name} WHERE id = 4`, (rows) => !rows.has(key(name, 4)))
  } finally {
    client.stop()
    await tap.close()
  }
  return {
    name,
    har: await readFile(harFile, 'utf8'),
    session: JSON.stringify(toRecording([client.shape.stream.recorder]))
  }
}
