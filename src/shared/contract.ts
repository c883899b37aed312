import type { z } from 'zod'
import { checkerCalls, checkerEvents } from './contract/checker'
import { dbCalls, dbEvents } from './contract/db'
import { doctorCalls } from './contract/doctor'
import { mcpCalls, mcpEvents } from './contract/mcp'
import { mcpToolCalls } from './contract/mcp-tools'
import { proxyCalls, proxyEvents } from './contract/proxy'
import { serverCalls } from './contract/server'
import { shapesWorkbenchCalls } from './contract/shapes-workbench'

/** Every call the renderer can make of main. Room contracts live in ./contract/<room>.ts. */
export const calls = {
  ...dbCalls,
  ...mcpCalls,
  ...mcpToolCalls,
  ...proxyCalls,
  ...shapesWorkbenchCalls,
  ...serverCalls,
  ...checkerCalls,
  ...doctorCalls
}

/** Every event main pushes to the renderer. */
export const events = {
  ...dbEvents,
  ...mcpEvents,
  ...proxyEvents,
  ...checkerEvents
}

export type Calls = typeof calls
export type CallName = keyof Calls
export type CallInput<N extends CallName> = z.input<Calls[N]['input']>
export type CallOutput<N extends CallName> = z.output<Calls[N]['output']>
export type Events = typeof events
export type EventName = keyof Events
export type EventPayload<N extends EventName> = z.output<Events[N]['payload']>

export const isCallName = (name: string): name is CallName => Object.hasOwn(calls, name)
export const isEventName = (name: string): name is EventName => Object.hasOwn(events, name)
