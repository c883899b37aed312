import { useEffect, useRef } from 'react'
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'

export interface ChartSeries {
  label: string
  stroke: string
  /** Draws the series as bars (counts per interval) instead of a line. */
  bars?: boolean
}

/**
 * A time chart drawn by uPlot (canvas): x in seconds since the epoch, one y array per series. The chart is made once
 * and given new data as it comes; its width follows its container.
 */
export function Chart({
  title,
  unit,
  series,
  data,
  height = 220,
  testId
}: {
  title: string
  unit: string
  series: ChartSeries[]
  data: [number[], ...number[][]]
  height?: number
  testId: string
}) {
  const container = useRef<HTMLDivElement>(null)
  const chart = useRef<uPlot | null>(null)
  const shape = JSON.stringify({ title, unit, series, height })

  useEffect(() => {
    const element = container.current
    if (!element) return
    const options: uPlot.Options = {
      title,
      width: Math.max(element.clientWidth, 300),
      height,
      scales: { x: { time: true } },
      axes: [{}, { label: unit, size: 60 }],
      series: [
        {},
        ...series.map((each) => ({
          label: each.label,
          stroke: each.stroke,
          width: 1.5,
          ...(each.bars ? { fill: `${each.stroke}55`, paths: uPlot.paths.bars?.({ size: [0.8, 40] }) } : {}),
          points: { show: !each.bars, size: 4 }
        }))
      ]
    }
    const made = new uPlot(options, [[], ...series.map(() => [])], element)
    chart.current = made
    const resize = new ResizeObserver(() => made.setSize({ width: Math.max(element.clientWidth, 300), height }))
    resize.observe(element)
    return () => {
      resize.disconnect()
      made.destroy()
      chart.current = null
    }
    // the chart is made again only when what it draws changes, not for new data
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape])

  useEffect(() => {
    chart.current?.setData(data)
  }, [data, shape])

  // what the chart draws, as numbers a test (or a person with devtools) can read: points, and the sum of each series
  const sums = data.slice(1).map((values) => values.reduce((sum, value) => sum + value, 0))
  return (
    <div
      className="chart"
      ref={container}
      data-testid={testId}
      data-points={data[0].length}
      data-sums={sums.map((sum) => Math.round(sum * 10) / 10).join(',')}
    />
  )
}
