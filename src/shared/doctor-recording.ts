import { z } from 'zod'
import type { ShapeRecorder } from './shape-client/recorder'

const HeaderListSchema = z.array(z.tuple([z.string(), z.string()]))

/**
 * A Syncscope recording: the shape client's recorder sessions (the workbench's Requests) as a file the sync doctor
 * reads. Requests are already masked by the recorder; times are milliseconds since the epoch.
 */
export const RecordingSchema = z.object({
  format: z.literal('syncscope-recording'),
  version: z.literal(1),
  exchanges: z.array(
    z.object({
      request: z.object({ at: z.number(), method: z.string(), url: z.string(), headers: HeaderListSchema }),
      response: z.object({ at: z.number(), status: z.number().int(), headers: HeaderListSchema }).optional(),
      body: z.object({ at: z.number(), text: z.string(), truncated: z.boolean() }).optional(),
      failure: z.object({ at: z.number(), message: z.string() }).optional(),
      /** SSE frames as they arrived. */
      frames: z.array(z.object({ at: z.number(), raw: z.string() })).default([])
    })
  )
})
export type Recording = z.infer<typeof RecordingSchema>

/** The recorders' exchanges (one recorder per client), in the order they were sent. */
export function toRecording(recorders: readonly ShapeRecorder[]): Recording {
  const exchanges = recorders.flatMap((recorder) => {
    const frames = new Map<number, Array<{ at: number; raw: string }>>()
    for (const entry of recorder.entries) {
      if (entry.type !== 'sse-frame') continue
      const list = frames.get(entry.requestId) ?? []
      list.push({ at: entry.at, raw: entry.frame.raw })
      frames.set(entry.requestId, list)
    }
    return recorder.exchanges.map(({ request, response, body, failure }) => ({
      request: { at: request.at, method: request.method, url: request.url, headers: request.headers },
      ...(response ? { response: { at: response.at, status: response.status, headers: response.headers } } : {}),
      ...(body ? { body: { at: body.at, text: body.text, truncated: body.truncated } } : {}),
      ...(failure ? { failure } : {}),
      frames: frames.get(request.id) ?? []
    }))
  })
  return { format: 'syncscope-recording', version: 1, exchanges: exchanges.sort((a, b) => a.request.at - b.request.at) }
}
