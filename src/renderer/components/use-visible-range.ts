import { useEffect, useRef, useState } from 'react'

/** Taller than this, a list is drawn in proportion (browsers cap an element's height near 33.5 million pixels). */
const MAX_HEIGHT = 15_000_000

/**
 * The rows of a long list of fixed-height rows that a scroller shows (plus `overscan` on either side), worked out from
 * its scroll position: no per-row bookkeeping, so a million rows cost the page nothing until drawn. `offsetOf` is a
 * row's top in the scroller's content; `before`/`after` the space above and below the drawn rows.
 */
export function useVisibleRange(count: number, rowHeight: number, overscan = 15) {
  const scroller = useRef<HTMLDivElement>(null)
  const [view, setView] = useState({ top: 0, height: 600 })
  useEffect(() => {
    const element = scroller.current
    if (!element) return
    let frame = 0
    const measure = () => {
      frame = 0
      setView((last) =>
        last.top === element.scrollTop && last.height === element.clientHeight
          ? last
          : { top: element.scrollTop, height: element.clientHeight }
      )
    }
    const onScroll = () => {
      frame ||= requestAnimationFrame(measure)
    }
    measure()
    element.addEventListener('scroll', onScroll, { passive: true })
    const resize = new ResizeObserver(onScroll)
    resize.observe(element)
    return () => {
      element.removeEventListener('scroll', onScroll)
      resize.disconnect()
      cancelAnimationFrame(frame)
    }
  }, [])
  const natural = count * rowHeight
  const totalSize = Math.min(natural, MAX_HEIGHT)
  const shown = view.height / rowHeight
  const first =
    natural <= MAX_HEIGHT
      ? view.top / rowHeight
      : (Math.min(view.top, totalSize - view.height) / Math.max(1, totalSize - view.height)) *
        Math.max(0, count - shown)
  const offsetOf = (index: number) =>
    natural <= MAX_HEIGHT ? index * rowHeight : view.top + (index - first) * rowHeight
  const start = Math.max(0, Math.min(count, Math.floor(first) - overscan))
  const end = Math.max(start, Math.min(count, Math.ceil(first + shown) + overscan))
  const before = Math.max(0, offsetOf(start))
  return {
    scroller,
    start,
    end,
    totalSize,
    offsetOf,
    before,
    after: Math.max(0, totalSize - before - (end - start) * rowHeight)
  }
}
