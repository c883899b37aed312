import type { Recording } from '../../../shared/doctor-recording'

/** What the Sync doctor needs of a workbench session: its requests so far and, when asked, its recording. */
export interface RecordedSession {
  summary: { requests: number } | null
  recording(): Promise<Recording>
}

export interface WorkbenchSessionRef {
  id: number
  label: string
  startedAt: number
  session: RecordedSession
}

const KEPT = 5
const sessions: WorkbenchSessionRef[] = []
let nextId = 1

/** The shape workbench hands each session it starts to the Sync doctor (the last few, newest first). */
export function rememberWorkbenchSession(label: string, session: RecordedSession): void {
  sessions.unshift({ id: nextId++, label, startedAt: Date.now(), session })
  sessions.splice(KEPT)
}

export const workbenchSessions = (): readonly WorkbenchSessionRef[] => sessions
