import type { RoomContext } from './room-context'
import { type McpRoom, startMcpRoom } from './mcp/room'
import { type ProxyRoom, startProxyRoom } from './proxy/room'
import { type ShapesRoom, startShapesRoom } from './shapes/room'

/**
 * Every room's long-lived object, handed to the contract handlers. A room adds its field here and starts itself in
 * `startRooms`; handlers in src/main/rpc/handlers/<room>.ts receive `(core, rooms)`.
 */
export interface Rooms {
  readonly context: RoomContext
  readonly shapes: ShapesRoom
  readonly proxy: ProxyRoom
  readonly mcp: McpRoom
}

export async function startRooms(context: RoomContext): Promise<Rooms> {
  return {
    context,
    shapes: startShapesRoom(context),
    proxy: await startProxyRoom(context),
    mcp: await startMcpRoom(context)
  }
}
