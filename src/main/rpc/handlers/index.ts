import type { Core } from '../../core'
import type { Rooms } from '../../rooms'
import type { Handlers } from '../dispatcher'
import { dbHandlers } from './db'

/** Every room's handlers, merged into the one table the dispatcher serves. */
export function createHandlers(core: Core, _rooms: Rooms): Handlers {
  return {
    ...dbHandlers(core)
  }
}
