import { randomUUID } from 'node:crypto'
import type { ShapeLogInfo } from '../../shared/contract/timetravel'
import type { OpenedBundle } from './bundle'
import { TimeTravelInputError, entryOf, type ReadLog } from './log'
import { ReplayCursor } from './replay'

/** Logs kept open at once (the oldest is closed past it): each may hold a million messages. */
const MAX_OPEN_LOGS = 8
/** Entries listed when a log is opened; the rest are read with `messages`. */
const LISTED_ENTRIES = 20_000

export interface OpenedLog {
  log: ReadLog
  /** Set for a bundle: its recording and rows, for verify. */
  bundle: OpenedBundle | null
  /** The scrubber's replay, moved from point to point. */
  cursor: ReplayCursor
}

/** The logs the UI has opened, by id, oldest closed first past MAX_OPEN_LOGS. */
export class OpenedLogs {
  private readonly logs = new Map<string, OpenedLog>()

  add(opened: Omit<OpenedLog, 'cursor'>): ShapeLogInfo {
    const logId = randomUUID()
    this.logs.set(logId, { ...opened, cursor: new ReplayCursor(opened.log) })
    while (this.logs.size > MAX_OPEN_LOGS) this.logs.delete(this.logs.keys().next().value as string)
    return infoOf(logId, opened.log)
  }

  get(logId: string): OpenedLog {
    const opened = this.logs.get(logId)
    if (!opened)
      throw new TimeTravelInputError(
        `no open log ${logId}: it was closed (at most ${MAX_OPEN_LOGS} stay open); open it again`
      )
    return opened
  }

  close(logId: string): boolean {
    return this.logs.delete(logId)
  }
}

export function infoOf(logId: string, log: ReadLog): ShapeLogInfo {
  return {
    logId,
    source: log.source,
    url: log.url,
    definition: log.definition,
    handle: log.handle,
    server: log.server,
    end: log.end,
    complete: log.complete,
    total: log.records.length,
    entries: log.records.slice(0, LISTED_ENTRIES).map(entryOf),
    notes: log.notes
  }
}
