import { useState } from 'react'
import { clockTime } from './clock'
import type { WorkbenchSession } from './session'
import { useSessionView, useVisibleRange } from './use-view'
import { SearchBox, VirtualTable } from './VirtualTable'

const ROW_HEIGHT = 24

/** The raw SSE frames as they arrived, keep-alive comments included, with the time since the previous frame. */
export function SseFramesView({ session }: { session: WorkbenchSession }) {
  const [search, setSearch] = useState('')
  const [count, setCount] = useState(0)
  const range = useVisibleRange(count, ROW_HEIGHT)
  const view = useSessionView(session, { kind: 'frames', search, start: range.start, end: range.end })
  if (view && view.matched !== count) setCount(view.matched)
  if (view && view.total === 0)
    return <p className="muted">No SSE frames yet{session.config.live === 'sse' ? '' : ': choose live mode SSE'}.</p>
  return (
    <div className="frames-view">
      <div className="toolbar">
        <SearchBox label="search the frames" value={search} onChange={setSearch} />
        <span className="count" data-testid="frames-count">
          {view ? `${view.matched} shown` : ''}
          {view && view.matched !== view.total ? ` of ${view.total}` : ''}
        </span>
      </div>
      <VirtualTable
        testId="sse-frames"
        range={range}
        view={view}
        rowHeight={ROW_HEIGHT}
        columns={5}
        head={
          <tr>
            <th>#</th>
            <th>arrived</th>
            <th>+ms</th>
            <th>request</th>
            <th>frame</th>
          </tr>
        }
        render={(frame) => (
          <tr key={frame.n} className={`frame-${frame.kind}`} data-kind={frame.kind}>
            <td>{frame.n}</td>
            <td>{clockTime(frame.at)}</td>
            <td className="num">{frame.gap ?? ''}</td>
            <td>#{frame.requestId}</td>
            <td className="mono frame" title={frame.raw}>
              {frame.raw}
            </td>
          </tr>
        )}
      />
    </div>
  )
}
