import { describe, expect, it } from 'vitest'
import { MaterialisedShape } from '../../src/shared/shape-client/materialise'
import type { Message } from '../../src/shared/shape-client/messages'
import { compareOffsets, laterOffset } from '../../src/shared/shape-client/offsets'
import { resolveRecord } from '../../src/shared/shape-client/resolve'

const change = (
  operation: 'insert' | 'update' | 'delete',
  id: string,
  value: Record<string, string | null>
): Message => ({
  key: `"public"."t"/"${id}"`,
  value: { id, ...value },
  headers: { operation }
})

describe('MaterialisedShape', () => {
  it('applies inserts, merges replica=default updates and removes deletes', () => {
    const shape = new MaterialisedShape({ log: 'full' })
    shape.apply([
      change('insert', '1', { title: 'a', status: 'todo' }),
      change('insert', '2', { title: 'b', status: 'todo' })
    ])
    const update = change('update', '1', { status: 'done' })
    const remove = change('delete', '2', {})
    const changes = shape.apply([update, remove])
    expect([...shape.rows.values()]).toEqual([{ id: '1', title: 'a', status: 'done' }])
    expect(changes).toEqual([
      {
        kind: 'update',
        key: '"public"."t"/"1"',
        before: { id: '1', title: 'a', status: 'todo' },
        row: { id: '1', title: 'a', status: 'done' },
        changed: ['status'],
        message: update
      },
      { kind: 'delete', key: '"public"."t"/"2"', before: { id: '2', title: 'b', status: 'todo' }, message: remove }
    ])
  })

  it('empties on must-refetch', () => {
    const shape = new MaterialisedShape({ log: 'full' })
    shape.apply([change('insert', '1', { title: 'a' })])
    expect(shape.apply([{ headers: { control: 'must-refetch' } }])).toEqual([{ kind: 'reset' }])
    expect(shape.rows.size).toBe(0)
  })

  it('in changes_only mode ignores updates and deletes of rows it never saw', () => {
    const shape = new MaterialisedShape({ log: 'changes_only' })
    expect(shape.apply([change('update', '1', { title: 'x' }), change('delete', '2', {})])).toEqual([])
    shape.apply([change('insert', '3', { title: 'c' }), change('update', '3', { title: 'd' })])
    expect([...shape.rows.values()]).toEqual([{ id: '3', title: 'd' }])
  })
})

describe('offsets', () => {
  it('orders offsets exactly, with -1 first and inf above every number', () => {
    const sorted = [
      '26800584_4',
      '0_inf',
      '-1',
      '0_0',
      '26800584_0',
      '18446744073709551615_0',
      '0_2',
      '18446744073709551614_inf'
    ]
    expect([...sorted].sort(compareOffsets)).toEqual([
      '-1',
      '0_0',
      '0_2',
      '0_inf',
      '26800584_0',
      '26800584_4',
      '18446744073709551614_inf',
      '18446744073709551615_0'
    ])
    expect(laterOffset('5_0', '4_8')).toBe('5_0')
  })
})

describe('resolveRecord', () => {
  it('resolves values, sync and async functions all at once and drops undefined', async () => {
    let inFlight = 0
    let maxInFlight = 0
    const slow = (value: string) => async () => {
      maxInFlight = Math.max(maxInFlight, ++inFlight)
      await new Promise((resolve) => setTimeout(resolve, 10))
      inFlight -= 1
      return value
    }
    const record = await resolveRecord({
      plain: 'p',
      sync: () => 'x',
      a: slow('a'),
      b: slow('b'),
      c: slow('c'),
      none: () => undefined
    })
    expect(record).toEqual({ plain: 'p', sync: 'x', a: 'a', b: 'b', c: 'c' })
    expect(maxInFlight).toBe(3)
  })
})
