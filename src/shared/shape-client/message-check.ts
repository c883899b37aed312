import type { Message } from './messages'

/**
 * The same test as MessageSchema (messages.ts) without building a copy of each message: a snapshot chunk is tens of
 * thousands of messages, and zod's copies doubled the garbage a sync makes. A value this accepts, the schema accepts
 * (test/shape-client/message-check.test.ts compares them); what it refuses goes through the schema for its error.
 */
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

function isRow(value: unknown): boolean {
  if (!isObject(value)) return false
  for (const key in value) {
    const cell = value[key]
    if (cell !== null && typeof cell !== 'string') return false
  }
  return true
}

const isArrayOf = (value: unknown, test: (item: unknown) => boolean): boolean =>
  Array.isArray(value) && value.every(test)
const optional = (value: unknown, test: (item: unknown) => boolean): boolean => value === undefined || test(value)
const isString = (value: unknown): boolean => typeof value === 'string'
const isBoolean = (value: unknown): boolean => typeof value === 'boolean'
const isNumber = (value: unknown): boolean => typeof value === 'number' && Number.isFinite(value)
const OPERATIONS = new Set(['insert', 'update', 'delete'])

function isChange(value: Record<string, unknown>, headers: Record<string, unknown>): boolean {
  return (
    typeof value.key === 'string' &&
    isRow(value.value) &&
    optional(value.old_value, isRow) &&
    OPERATIONS.has(headers.operation as string) &&
    optional(headers.tags, (tags) => isArrayOf(tags, isString)) &&
    optional(headers.removed_tags, (tags) => isArrayOf(tags, isString)) &&
    optional(headers.active_conditions, (conditions) => isArrayOf(conditions, isBoolean)) &&
    optional(headers.is_move_in, isBoolean)
  )
}

const isPattern = (pattern: unknown): boolean =>
  isObject(pattern) &&
  Number.isInteger(pattern.pos) &&
  (pattern.pos as number) >= 0 &&
  typeof pattern.value === 'string'

function isEvent(headers: Record<string, unknown>): boolean {
  return (
    typeof headers.event === 'string' &&
    optional(headers.patterns, (patterns) => isArrayOf(patterns, isPattern)) &&
    optional(headers.txids, (txids) => isArrayOf(txids, isNumber))
  )
}

export function isMessage(value: unknown): value is Message {
  if (!isObject(value) || !isObject(value.headers)) return false
  const { headers } = value
  return (
    isChange(value, headers) ||
    (typeof headers.control === 'string' && optional(headers.global_last_seen_lsn, isString)) ||
    isEvent(headers)
  )
}

export const isMessageArray = (value: unknown): value is Message[] => Array.isArray(value) && value.every(isMessage)
