import type { CheckContext, Outcome } from '../context'
import type { FollowResult } from '../follow'
import { followShape } from '../follow'

export interface Check {
  id: string
  title: string
  /** `table`: sends its own `where`/`columns`, so it needs an endpoint that takes `table` (--table); `writes`: --write-sql. */
  needs?: Array<'table' | 'writes'>
  run(ctx: CheckContext, outcome: Outcome): Promise<void>
}

/** The shape of --table (or the endpoint's own shape) followed to up-to-date, once for every check. */
export const initialSync = (ctx: CheckContext): Promise<FollowResult> => ctx.memo('initial', () => followShape(ctx, {}))

/** A shape of the checker's own table (with --write-sql), followed to up-to-date; `where` makes it a shape of its own. */
export const ownShape = (ctx: CheckContext, where: string | null): Promise<FollowResult> => {
  const table = ctx.writeTable?.name
  if (!table) throw new Error('ownShape needs --write-sql')
  return ctx.memo(`own:${where ?? ''}`, () => followShape(ctx, { table, where }))
}

/** The synced shape a check builds on, or null after skipping the check with the reason. */
export async function syncedOrSkip(
  ctx: CheckContext,
  outcome: Outcome,
  result: Promise<FollowResult> = initialSync(ctx)
) {
  const { synced } = await result
  if (!synced) outcome.skip('needs a completed initial sync (see initial-sync)')
  return synced
}

export const randomTag = (): string => `syncscope-check-${Math.random().toString(36).slice(2, 10)}`

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
