import { formatBytes } from '../../../shared/format-bytes'

/** Rows the Server page asks for at a time: a window around what is on screen, whatever the number of shapes. */
export const WINDOW_ROWS = 300
const WINDOW_STEP = 100

/**
 * Where the window of fetched rows starts for a first visible row: in steps of 100, with 100 rows kept above, so a
 * scroll asks again only once it moved past them.
 */
export function windowStart(firstVisible: number): number {
  return Math.max(0, Math.floor(firstVisible / WINDOW_STEP) * WINDOW_STEP - WINDOW_STEP)
}

/** `4 s ago`, `3 min ago`, `2 h ago`, `5 d ago`; `never` for null. */
export function ago(iso: string | null, now: number): string {
  if (iso === null) return 'never'
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000))
  if (seconds < 120) return `${seconds} s ago`
  if (seconds < 7200) return `${Math.round(seconds / 60)} min ago`
  if (seconds < 172_800) return `${Math.round(seconds / 3600)} h ago`
  return `${Math.round(seconds / 86_400)} d ago`
}

/** `42%` of a bound; `0%` when there is none. */
export function share(part: number, whole: number): string {
  return whole > 0 ? `${Math.min(100, Math.round((part * 100) / whole))}%` : '0%'
}

/** Bytes, or `—` when Postgres did not say. */
export const bytesOrDash = (bytes: number | null): string => (bytes === null ? '—' : formatBytes(bytes))

/** A lag in milliseconds as `12 ms` / `3.4 s`, or `—`. */
export function millis(ms: number | null): string {
  if (ms === null) return '—'
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`
}
