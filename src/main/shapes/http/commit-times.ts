import type { ShapeService } from '../service'
import type { Responder } from './responder'
import { lastValue } from './shape-request'

/** Transactions one answer lists at most (the oldest first: a client asks again after the last one). */
const LISTED = 1_000

/**
 * `GET /v1/debug/commit-times?handle=H&after=LSN`, a Syncscope extension (docs/protocol.md): for the shape's last
 * transactions after commit LSN `after`, when Postgres committed each and when the server appended it to the shape's
 * log, so a client can time commit → append → arrival. Official clients never ask for it.
 */
export function serveCommitTimes(r: Responder, service: ShapeService, query: URLSearchParams): void {
  const handle = lastValue(query, 'handle')
  const after = lastValue(query, 'after') ?? '0'
  const errors: Record<string, string[]> = {}
  if (!handle) errors.handle = ["can't be blank"]
  if (!/^\d{1,20}$/.test(after)) errors.after = ['must be a commit LSN as a decimal (as in offsets), e.g. 0']
  if (Object.keys(errors).length > 0) return r.invalidRequest(errors)
  const shape = service.shapeByHandle(handle as string)
  if (!shape) return r.json(404, { message: `No shape with handle ${handle}` })
  const transactions = shape.appendTimes.after(BigInt(after), LISTED).map((append) => ({
    lsn: append.lsn.toString(),
    xid: append.xid,
    committed_at: service.commitTimes.at(append.lsn),
    appended_at: Math.round(append.appendedAt * 1000) / 1000,
    changes: append.changes
  }))
  r.json(200, { handle: shape.handle, transactions }, { 'cache-control': 'no-store' })
}
