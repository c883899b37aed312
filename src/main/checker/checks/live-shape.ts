import { headerName } from '../../../shared/protocol'
import type { CheckContext, Outcome } from '../context'
import type { Synced } from '../follow'
import type { OpenStream, Probe } from '../probe'
import { ownShape, syncedOrSkip } from './check'

/** What the live checks (long-poll, SSE, must-refetch) share: the shape they follow, its live URL, the cursor. */

/** How long a change may take from commit to the client. */
export const DELIVERY_MS = 5_000
/** A cursor past any time window: the server must answer with a larger one. */
const FUTURE_CURSOR = '99999999999'

export const liveParams = (synced: Synced, extra: Record<string, string> = {}) => ({
  ...synced.params,
  offset: synced.offset,
  handle: synced.handle,
  live: 'true',
  cursor: FUTURE_CURSOR,
  ...extra
})

/** The shape the live checks follow: the checker's own table when it may write (a shape of its own per `where`). */
export async function liveShape(ctx: CheckContext, outcome: Outcome, where: string | null): Promise<Synced | null> {
  if (!ctx.writeTable) return syncedOrSkip(ctx, outcome)
  const { synced, outcome: followed } = await ownShape(ctx, where)
  const [first] = followed.findings
  if (!synced)
    outcome.skip(
      `the checker's table ${ctx.writeTable.name} could not be synced through the endpoint (${first?.id}: ${first?.message}); is --write-sql the database the service follows?`
    )
  return synced
}

/** A shape that no row the checker commits ever enters (with writes): its live requests wait undisturbed. */
export const quietShape = (ctx: CheckContext, outcome: Outcome): Promise<Synced | null> =>
  liveShape(ctx, outcome, ctx.writeTable ? 'id < 0' : null)

/** A live answer's cursor is there and past the one sent. */
export function expectCursor(ctx: CheckContext, outcome: Outcome, probe: Probe | OpenStream): void {
  const response = 'response' in probe ? probe.response : probe
  const cursor = response.headers.get(headerName(ctx.brand, 'cursor'))
  if (cursor === null) return
  if (!/^\d+$/.test(cursor) || BigInt(cursor) <= BigInt(FUTURE_CURSOR))
    outcome.add(
      'cursor.not-advanced',
      `Sent cursor=${FUTURE_CURSOR}, the answer's cursor is ${cursor}: the next live URL repeats, so a cache can hand the client an old answer.`,
      probe
    )
}

/** Commits a row into the checker's table and returns its key as the shape log spells it. */
export async function commitRow(ctx: CheckContext, label: string): Promise<string> {
  const id = await (ctx.writeTable as NonNullable<CheckContext['writeTable']>).insert(label)
  return `/"${id}"`
}
