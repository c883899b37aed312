import { useEffect, useId, useRef, useSyncExternalStore } from 'react'
import { useVirtualizer } from '@tanstack/react-virtual'
import type { ViewData, ViewQuery } from './engine/protocol'
import type { WorkbenchSession } from './session'

/**
 * What a view of the session shows: the query goes to the workbench's worker, and its answer comes with the next
 * update (undefined until then; for a changed query, the previous answer until the new one).
 */
export function useSessionView<K extends ViewQuery['kind']>(
  session: WorkbenchSession,
  query: Extract<ViewQuery, { kind: K }>
): Extract<ViewData, { kind: K }> | undefined {
  const id = useId()
  const key = JSON.stringify(query)
  const latest = useRef(query)
  latest.current = query
  useSyncExternalStore(session.subscribe, session.getVersion)
  useEffect(() => session.showView(id, latest.current), [session, id, key])
  useEffect(() => () => session.hideView(id), [session, id])
  return session.view(id) as Extract<ViewData, { kind: K }> | undefined
}

/** The rows of a long list a scroller shows (plus some on either side), and the space above and below them. */
export function useVisibleRange(count: number, rowHeight: number, overscan = 15) {
  const scroller = useRef<HTMLDivElement>(null)
  const virtualizer = useVirtualizer({
    count,
    getScrollElement: () => scroller.current,
    estimateSize: () => rowHeight,
    overscan,
    initialRect: { width: 800, height: 600 }
  })
  const items = virtualizer.getVirtualItems()
  const first = items[0]
  const last = items[items.length - 1]
  return {
    scroller,
    virtualizer,
    start: first?.index ?? 0,
    end: last ? last.index + 1 : 0,
    before: first?.start ?? 0,
    after: Math.max(0, virtualizer.getTotalSize() - (last?.end ?? 0))
  }
}

/** The row of a view's window at a list index, when the window holds it. */
export function rowAt<T>(view: { start: number; rows: T[] } | undefined, index: number): T | undefined {
  return view ? view.rows[index - view.start] : undefined
}
