import { useEffect, useId, useRef, useState, useSyncExternalStore } from 'react'
import { useVisibleRange } from '../../components/use-visible-range'
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

/** The row of a view's window at a list index, when the window holds it. */
export function rowAt<T>(view: { start: number; rows: T[] } | undefined, index: number): T | undefined {
  return view ? view.rows[index - view.start] : undefined
}

type ListQuery = Extract<ViewQuery, { kind: 'log' | 'frames' | 'requests' }>

/**
 * A long list's view: its window follows the scroller, and its length (what the filter and search hold) comes with
 * each answer, for the scroller's height. `query` makes the view's query for a window.
 */
export function useListView<Q extends ListQuery>(
  session: WorkbenchSession,
  rowHeight: number,
  query: (window: { start: number; end: number }) => Q
) {
  const [count, setCount] = useState(0)
  const range = useVisibleRange(count, rowHeight)
  const view = useSessionView(session, query({ start: range.start, end: range.end })) as
    Extract<ViewData, { kind: Q['kind'] }> | undefined
  const matched = (view as { matched: number } | undefined)?.matched
  if (matched !== undefined && matched !== count) setCount(matched)
  return { range, view }
}
