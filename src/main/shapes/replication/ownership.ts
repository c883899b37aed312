import { createHash } from 'node:crypto'
import { hostname } from 'node:os'
import { resolve } from 'node:path'
import type pg from 'pg'
import { quoteIdent } from '../../sql'

const OWNED_NAME = /syncscope_[0-9a-f]{10}/g
/** How long a slot of this folder that is still in use (a server killed a moment ago) may take to be let go. */
const RELEASE_WAIT_MS = 10_000

/**
 * The slot and publication name of a data folder: derived from the machine and the folder's absolute path, so that a
 * reset (an unreadable state.json) still knows which slot was its own, and another folder's never matches.
 */
export function folderSlotName(dir: string): string {
  return `syncscope_${createHash('sha256')
    .update(`${hostname()}\0${resolve(dir)}`)
    .digest('hex')
    .slice(0, 10)}`
}

/** Slot names a (possibly damaged) state file still shows. */
export function slotNamesIn(text: string): string[] {
  return text.match(OWNED_NAME) ?? []
}

/**
 * Drops the slots and publications named `names`: this folder's, whose state is being reset. A slot in use is waited
 * for (its server may have been killed a moment ago); one still in use after that belongs to a running server, and
 * starting is refused rather than taking it away.
 */
export async function dropOwnedReplication(
  pool: pg.Pool,
  names: ReadonlySet<string>,
  log: (line: string) => void
): Promise<void> {
  for (const name of names) {
    const deadline = Date.now() + RELEASE_WAIT_MS
    for (;;) {
      const { rows } = await pool.query<{ active_pid: number | null }>(
        'SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1',
        [name]
      )
      const slot = rows[0]
      if (!slot) break
      if (slot.active_pid === null) {
        await pool.query('SELECT pg_drop_replication_slot($1)', [name])
        log(`dropped replication slot "${name}" of the reset data folder`)
        break
      }
      if (Date.now() > deadline) {
        throw new Error(
          `replication slot "${name}" of this data folder is in use by Postgres backend ${slot.active_pid}: is another syncscope serve running on the same data folder? Stop it first`
        )
      }
      await new Promise((done) => setTimeout(done, 200))
    }
    await pool.query(`DROP PUBLICATION IF EXISTS ${quoteIdent(name)}`)
  }
}
