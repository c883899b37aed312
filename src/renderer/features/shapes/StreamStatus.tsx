import { useSyncExternalStore } from 'react'
import type { ShapeStreamState } from '../../../shared/shape-client'
import type { WorkbenchSession } from './session'

const PHASE_CLASS: Record<ShapeStreamState['phase'], string> = {
  initial: 'starting',
  syncing: 'starting',
  live: 'ok',
  'sse-fallback': 'warn',
  'up-to-date': 'ok',
  retrying: 'warn',
  stopped: '',
  failed: 'error'
}

/** Where the stream is: phase, brand, handle, offset, cursor and live mode (and whether SSE fell back). */
export function StreamStatus({ state }: { state: ShapeStreamState }) {
  return (
    <dl className="facts stream-status" data-testid="stream-status">
      <dt>phase</dt>
      <dd>
        <span className={`badge ${PHASE_CLASS[state.phase]}`} data-testid="phase">
          {state.phase}
        </span>
      </dd>
      <dt>header brand</dt>
      <dd>{state.brand ?? '—'}</dd>
      <dt>handle</dt>
      <dd className="mono">{state.handle ?? '—'}</dd>
      <dt>offset</dt>
      <dd className="mono" data-testid="offset">
        {state.offset}
      </dd>
      <dt>cursor</dt>
      <dd className="mono">{state.cursor ?? '—'}</dd>
      <dt>live mode</dt>
      <dd>
        {state.liveMode}
        {state.sseFellBack && <span className="badge warn"> fell back from SSE: a proxy buffers responses</span>}
      </dd>
    </dl>
  )
}

/** The stream's status, following the session's updates. */
export function SessionStatus({ session }: { session: WorkbenchSession }) {
  useSyncExternalStore(session.subscribe, session.getVersion)
  const state = session.summary?.state
  return state ? <StreamStatus state={state} /> : null
}
