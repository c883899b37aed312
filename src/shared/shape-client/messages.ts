import { z } from 'zod'
import { CONTROL } from '../protocol'

/** A row as the server sends it: column name → Postgres text output (or null). */
export const RowSchema = z.record(z.string(), z.string().nullable())
export type Row = z.infer<typeof RowSchema>

export const OperationSchema = z.enum(['insert', 'update', 'delete'])
export type Operation = z.infer<typeof OperationSchema>

/**
 * A subquery shape's tag: one per DNF disjunct of its where, `/`-separated slots, one per position (a hash for a
 * subquery atom, `1` for a plain one, empty for a position outside the disjunct). Opaque otherwise.
 */
export const TagSchema = z.string()

export const ChangeMessageSchema = z.object({
  key: z.string(),
  value: RowSchema,
  old_value: RowSchema.optional(),
  headers: z.looseObject({
    operation: OperationSchema,
    tags: z.array(TagSchema).optional(),
    /** Updates: the old row's tags the new row no longer has. */
    removed_tags: z.array(TagSchema).optional(),
    /** One per DNF position: that atom's truth for this row, its polarity applied. */
    active_conditions: z.array(z.boolean()).optional(),
    /** A row a move-in query read (not a replicated change). */
    is_move_in: z.boolean().optional()
  })
})
export type ChangeMessage = z.infer<typeof ChangeMessageSchema>

export const ControlMessageSchema = z.object({
  headers: z.looseObject({ control: z.string(), global_last_seen_lsn: z.string().optional() })
})
export type ControlMessage = z.infer<typeof ControlMessageSchema>

/** Rows whose tag holds `value` in slot `pos` are the ones a move concerns. */
export const MovePatternSchema = z.object({ pos: z.number().int().nonnegative(), value: z.string() })
export type MovePattern = z.infer<typeof MovePatternSchema>

/** Subquery shapes' `move-in` / `move-out` events (other events are passed on and otherwise ignored). */
export const EventMessageSchema = z.object({
  headers: z.looseObject({
    event: z.string(),
    patterns: z.array(MovePatternSchema).optional(),
    txids: z.array(z.number()).optional()
  })
})
export type EventMessage = z.infer<typeof EventMessageSchema>

export const MessageSchema = z.union([ChangeMessageSchema, ControlMessageSchema, EventMessageSchema])
export type Message = z.infer<typeof MessageSchema>

export const MessageArraySchema = z.array(MessageSchema)

/** The messages of one response, as a stream hands them to its subscribers. */
export interface MessageBatch {
  messages: Message[]
  requestId: number
}

export const isChangeMessage = (message: Message): message is ChangeMessage => 'key' in message
export const isEventMessage = (message: Message): message is EventMessage => 'event' in message.headers
export const isControlMessage = (message: Message): message is ControlMessage => 'control' in message.headers
export const isUpToDate = (message: Message): boolean =>
  isControlMessage(message) && message.headers.control === CONTROL.upToDate
export const isMustRefetch = (message: Message): boolean =>
  isControlMessage(message) && message.headers.control === CONTROL.mustRefetch
