import { expect } from 'vitest'
import { ServerStateSchema, type ServerState, type ShapeState } from '../../src/shared/protocol/debug-shapes'
import { shapeUrl } from './shape-http'
import type { TestShapeServer } from './shape-server'

/** GET /v1/debug/shapes with these parameters (and headers); the JSON checked against the schema when it is a 200. */
export async function debugShapes(
  server: TestShapeServer,
  params: Record<string, string> = {},
  headers: Record<string, string> = {}
): Promise<{ status: number; headers: Headers; body: unknown; state: () => ServerState }> {
  const response = await fetch(shapeUrl(server.url, params, '/v1/debug/shapes'), { headers })
  const text = await response.text()
  const body: unknown = text === '' ? null : JSON.parse(text)
  return {
    status: response.status,
    headers: response.headers,
    body,
    state: () => ServerStateSchema.parse(body)
  }
}

/** Every shape of the inventory, page after page (`after` = the page before's `next`). */
export async function allPages(server: TestShapeServer, limit: number, params: Record<string, string> = {}) {
  const pages: ServerState[] = []
  let after: string | null = null
  do {
    const answer = await debugShapes(server, { ...params, limit: String(limit), ...(after ? { after } : {}) })
    expect(answer.status).toBe(200)
    const state = answer.state()
    pages.push(state)
    after = state.next
  } while (after !== null && pages.length < 100)
  return pages
}

/** The shape of that handle in an answer. */
export const entry = (state: ServerState, handle: string): ShapeState | undefined =>
  state.shapes.find((shape) => shape.handle === handle)
