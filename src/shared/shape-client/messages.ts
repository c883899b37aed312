import { z } from 'zod'

/** A row as the server sends it: column name → Postgres text output (or null). */
export const RowSchema = z.record(z.string(), z.string().nullable())
export type Row = z.infer<typeof RowSchema>

export const OperationSchema = z.enum(['insert', 'update', 'delete'])
export type Operation = z.infer<typeof OperationSchema>

export const ChangeMessageSchema = z.object({
  key: z.string(),
  value: RowSchema,
  old_value: RowSchema.optional(),
  headers: z.looseObject({ operation: OperationSchema })
})
export type ChangeMessage = z.infer<typeof ChangeMessageSchema>

export const ControlMessageSchema = z.object({
  headers: z.looseObject({ control: z.string(), global_last_seen_lsn: z.string().optional() })
})
export type ControlMessage = z.infer<typeof ControlMessageSchema>

/** Subquery shapes' move-in / move-out messages: shown, not materialised. */
export const EventMessageSchema = z.object({ headers: z.looseObject({ event: z.string() }) })
export type EventMessage = z.infer<typeof EventMessageSchema>

export const MessageSchema = z.union([ChangeMessageSchema, ControlMessageSchema, EventMessageSchema])
export type Message = z.infer<typeof MessageSchema>

export const MessageArraySchema = z.array(MessageSchema)

export const isChangeMessage = (message: Message): message is ChangeMessage => 'key' in message
export const isControlMessage = (message: Message): message is ControlMessage => 'control' in message.headers
export const isUpToDate = (message: Message): boolean => isControlMessage(message) && message.headers.control === 'up-to-date'
export const isMustRefetch = (message: Message): boolean => isControlMessage(message) && message.headers.control === 'must-refetch'
