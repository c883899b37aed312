import type { Core } from '../../core'
import type { Rooms } from '../../rooms'
import type { Handlers } from '../dispatcher'
import { checkerHandlers } from './checker'
import { dbHandlers } from './db'
import { doctorHandlers } from './doctor'
import { mcpHandlers } from './mcp'
import { mcpToolHandlers } from './mcp-tools'
import { proxyHandlers } from './proxy'
import { serverHandlers } from './server'
import { shapesWorkbenchHandlers } from './shapes-workbench'

/** Every room's handlers, merged into the one table the dispatcher serves. */
export function createHandlers(core: Core, rooms: Rooms): Handlers {
  return {
    ...dbHandlers(core),
    ...mcpHandlers(core, rooms),
    ...mcpToolHandlers(rooms),
    ...proxyHandlers(core, rooms),
    ...shapesWorkbenchHandlers(core, rooms),
    ...serverHandlers(rooms),
    ...checkerHandlers(core, rooms),
    ...doctorHandlers()
  }
}
