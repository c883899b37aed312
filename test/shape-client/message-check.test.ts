import { describe, expect, it } from 'vitest'
import { MessageArraySchema, MessageSchema } from '../../src/shared/shape-client'
import { isMessage, isMessageArray } from '../../src/shared/shape-client/message-check'

const VALID: unknown[] = [
  {
    key: '"public"."t"/"1"',
    value: { id: '1', title: null },
    headers: { operation: 'insert', relation: ['public', 't'] }
  },
  {
    key: 'k',
    value: { id: '1' },
    old_value: { id: '1', title: 'old' },
    headers: { operation: 'update', lsn: '123', op_position: 2, txids: [7], last: true }
  },
  { key: 'k', value: {}, headers: { operation: 'delete' } },
  {
    key: 'k',
    value: { id: '1' },
    headers: {
      operation: 'insert',
      tags: ['a/1', '/b'],
      removed_tags: ['c'],
      active_conditions: [true, false],
      is_move_in: true
    }
  },
  { headers: { control: 'up-to-date', global_last_seen_lsn: '99' } },
  { headers: { control: 'must-refetch' } },
  { headers: { control: 'snapshot-end', xmin: '1', xmax: '2', xip_list: [] } },
  { headers: { event: 'move-out', patterns: [{ pos: 0, value: 'h' }], txids: [1, 2] } },
  { headers: { event: 'something-new' } }
]

const REPLACEMENTS: unknown[] = [undefined, null, 0, 1.5, -1, '', 'x', true, [], ['x'], [1], [true], {}, { pos: 0 }]

/** Every message with one field (at any depth) removed or replaced by a value of another type. */
function* variants(value: unknown): Generator<unknown> {
  yield value
  if (typeof value !== 'object' || value === null) return
  const entries = Array.isArray(value) ? [...value.entries()] : Object.entries(value)
  for (const [field, inner] of entries) {
    for (const replacement of REPLACEMENTS) {
      const copy = (Array.isArray(value) ? [...value] : { ...value }) as Record<string | number, unknown>
      if (replacement === undefined && !Array.isArray(value)) delete copy[field]
      else copy[field] = replacement
      yield copy
    }
    for (const deeper of variants(inner)) {
      if (deeper === inner) continue
      const copy = (Array.isArray(value) ? [...value] : { ...value }) as Record<string | number, unknown>
      copy[field] = deeper
      yield copy
    }
  }
}

describe('isMessage: the shape message schema without a copy', () => {
  it('agrees with MessageSchema on every valid message and every one-field change of them', () => {
    let compared = 0
    for (const base of VALID) {
      for (const variant of variants(base)) {
        expect(isMessage(variant), JSON.stringify(variant)).toBe(MessageSchema.safeParse(variant).success)
        compared += 1
      }
    }
    expect(compared).toBeGreaterThan(800)
  })

  it('agrees on arrays and on what is not a message at all', () => {
    for (const value of [[], VALID, [...VALID, null], [1], null, 'x', {}, { headers: [] }, { headers: null }])
      expect(isMessageArray(value)).toBe(MessageArraySchema.safeParse(value).success)
  })
})
