import { useState } from 'react'
import { clockTime } from './clock'
import type { WorkbenchSession } from './session'
import { useListView } from './use-view'
import { SearchBox, ShownCount, VirtualTable } from './VirtualTable'

const ROW_HEIGHT = 24

/** The raw SSE frames as they arrived, keep-alive comments included, with the time since the previous frame. */
export function SseFramesView({ session }: { session: WorkbenchSession }) {
  const [search, setSearch] = useState('')
  const { range, view } = useListView(session, ROW_HEIGHT, (rows) => ({ kind: 'frames', search, ...rows }))
  if (view && view.total === 0)
    return <p className="muted">No SSE frames yet{session.config.live === 'sse' ? '' : ': choose live mode SSE'}.</p>
  return (
    <div className="frames-view">
      <div className="toolbar">
        <SearchBox label="search the frames" value={search} onChange={setSearch} />
        <ShownCount testId="frames-count" view={view} />
      </div>
      <VirtualTable
        testId="sse-frames"
        range={range}
        view={view}
        rowHeight={ROW_HEIGHT}
        columns={['#', 'arrived', '+ms', 'request', 'frame']}
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
