import type { RecordEntry } from '../../../shared/shape-client'
import { clockTime } from './clock'
import type { WorkbenchSession } from './session'

const SHOWN = 2_000
type FrameEntry = Extract<RecordEntry, { type: 'sse-frame' }>

/** The raw SSE frames as they arrived, keep-alive comments included, with the time since the previous frame. */
export function SseFramesView({ session }: { session: WorkbenchSession }) {
  const frames = session.recorder.entries.filter((entry): entry is FrameEntry => entry.type === 'sse-frame')
  const shown = frames.slice(-SHOWN)
  const offset = frames.length - shown.length
  if (frames.length === 0)
    return <p className="muted">No SSE frames yet{session.config.live === 'sse' ? '' : ': choose live mode SSE'}.</p>
  return (
    <div className="scroll">
      <table className="grid compact" data-testid="sse-frames">
        <thead>
          <tr>
            <th>#</th>
            <th>arrived</th>
            <th>+ms</th>
            <th>request</th>
            <th>frame</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((entry, index) => {
            const previous = frames[offset + index - 1]
            return (
              <tr key={offset + index} className={`frame-${entry.frame.kind}`} data-kind={entry.frame.kind}>
                <td>{offset + index + 1}</td>
                <td>{clockTime(entry.at)}</td>
                <td className="num">{previous ? Math.round(entry.at - previous.at) : ''}</td>
                <td>#{entry.requestId}</td>
                <td>
                  <pre className="frame">{entry.frame.raw}</pre>
                </td>
              </tr>
            )
          })}
        </tbody>
      </table>
    </div>
  )
}
