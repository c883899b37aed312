import { existsSync, readFileSync } from 'node:fs'
import { mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type pg from 'pg'
import { z } from 'zod'
import { writeDurably } from '../../fs/atomic-write'
import { parseJson } from '../storage/json-file'
import { dropOwnedReplication, folderSlotName, slotNamesIn } from './ownership'

const StateSchema = z.object({ systemId: z.string(), slotName: z.string(), appliedLsn: z.string().nullable() })
/** state.json: which cluster and slot a folder follows, and the last commit its shape logs durably hold. */
export type AppliedState = z.infer<typeof StateSchema>

export const statePath = (dir: string): string => join(dir, 'state.json')

export async function saveState(dir: string, state: AppliedState): Promise<void> {
  await writeDurably(statePath(dir), JSON.stringify(state))
}

/**
 * Reads (or starts) the replication state of this folder. An unreadable state, or one of another database cluster,
 * starts afresh: the shapes are dropped, and so are the slot and publication this folder owned, which would otherwise
 * hold back WAL for good.
 */
export async function prepareState(pool: pg.Pool, dir: string, log: (line: string) => void): Promise<AppliedState> {
  const { rows } = await pool.query<{ system_id: string; database: string }>(
    'SELECT system_identifier::text AS system_id, current_database() AS database FROM pg_control_system()'
  )
  const systemId = `${rows[0]?.system_id ?? 'unknown'}/${rows[0]?.database ?? ''}`
  const path = statePath(dir)
  const text = existsSync(path) ? readFileSync(path, 'utf8') : null
  const saved = text === null ? null : StateSchema.safeParse(parseJson(text))
  if (saved?.success && saved.data.systemId === systemId) return saved.data
  if (text !== null && !saved?.success)
    log(`${path} is unreadable: its shapes are dropped and replication starts afresh`)
  const slotName = folderSlotName(dir)
  await dropOwnedReplication(pool, new Set([slotName, ...slotNamesIn(text ?? '')]), log)
  await rm(dir, { recursive: true, force: true })
  await mkdir(dir, { recursive: true })
  const state: AppliedState = { systemId, slotName, appliedLsn: null }
  await saveState(dir, state)
  return state
}
