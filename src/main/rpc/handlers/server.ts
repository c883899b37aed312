import { RpcError } from '../../../shared/contract/errors'
import type { serverCalls } from '../../../shared/contract/server'
import type { Rooms } from '../../rooms'
import type { HandlersFor } from '../dispatcher'

/** The engine's answer, or the reason it has none (starting, or the database cannot be followed) as an RpcError. */
function running<T>(answer: T | { unavailable: string }): T {
  if (typeof answer === 'object' && answer !== null && 'unavailable' in answer)
    throw new RpcError('shape_server_unavailable', answer.unavailable)
  return answer
}

export function serverHandlers(rooms: Rooms): HandlersFor<typeof serverCalls> {
  return {
    'server.state': async (query) => running(await rooms.shapes.state(query)),
    'server.dropShape': async ({ handle }) => ({ dropped: running(await rooms.shapes.dropShape(handle)) }),
    'server.dropAllShapes': async () => ({ dropped: running(await rooms.shapes.dropAllShapes()) })
  }
}
