import type { DoctorReport } from '../../shared/contract/doctor'
import { diagnoseShape, explainShape } from './diagnose'
import { readRecording } from './input'
import { buildTimeline, type ShapeExchange } from './timeline'

/** Reads a HAR file or a Syncscope recording and diagnoses its shape requests; throws RecordingInputError on a bad file. */
export function diagnoseRecording(name: string, text: string): DoctorReport {
  const input = readRecording(text)
  const timeline = buildTimeline(input.exchanges)
  const shapes = new Map<string, ShapeExchange[]>()
  for (const exchange of timeline)
    shapes.set(exchange.entry.shape, [...(shapes.get(exchange.entry.shape) ?? []), exchange])
  const findings = [...shapes.values()].flatMap(diagnoseShape)
  const notes = [...shapes.values()].flatMap(explainShape)
  const ignored = input.exchanges.length - timeline.length
  if (timeline.length === 0)
    notes.unshift(
      'No shape requests in this file (none carries protocol headers or asks for an `offset`): record while the app syncs.'
    )
  if (shapes.size > 1) notes.unshift(`${shapes.size} shapes in this recording; each is diagnosed on its own.`)
  return {
    source: { kind: input.kind, name, creator: input.creator },
    ignored,
    timeline: timeline.map((exchange) => exchange.entry),
    findings,
    notes
  }
}
