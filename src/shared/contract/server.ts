import { z } from 'zod'
import { ServerStateSchema, ShapeQuerySchema } from '../protocol/debug-shapes'
import { call } from './define'

/** The Server page: the shape server's state (the same JSON as `GET /v1/debug/shapes`) and dropping shapes. */
export const serverCalls = {
  /** A window of the shapes (filtered, sorted), the limits and the replication slots with their warnings. */
  'server.state': call(ShapeQuerySchema, ServerStateSchema),
  /** Drops one shape, as `DELETE /v1/shape?handle=`: its clients get 409 and refetch. */
  'server.dropShape': call(z.object({ handle: z.string().min(1).max(200) }), z.object({ dropped: z.boolean() })),
  /** Drops every shape of the server; resolves once their files are removed. */
  'server.dropAllShapes': call(z.object({}), z.object({ dropped: z.number().int().nonnegative() }))
}
