import type { ShapeRecorder } from '../../../shared/shape-client/recorder'

export interface WorkbenchSessionRef {
  id: number
  label: string
  startedAt: number
  recorders: ShapeRecorder[]
}

const KEPT = 5
const sessions: WorkbenchSessionRef[] = []
let nextId = 1

/** The shape workbench hands each session it starts to the Sync doctor (the last few, newest first). */
export function rememberWorkbenchSession(label: string, recorders: ShapeRecorder[]): void {
  sessions.unshift({ id: nextId++, label, startedAt: Date.now(), recorders })
  sessions.splice(KEPT)
}

export const workbenchSessions = (): readonly WorkbenchSessionRef[] => sessions
