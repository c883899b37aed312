import { beforeAll, describe, expect, it } from 'vitest'
import { type ColumnTypes, type CompiledWhere, compileWhere, createShapeRouter, loadParser } from '../../src/main/sql'

const columns: ColumnTypes = {
  id: { type: 'int4', category: 'number' },
  owner_id: { type: 'int8', category: 'number' },
  title: { type: 'text', category: 'text' },
  price: { type: 'numeric', category: 'number' },
  uid: { type: 'uuid', category: 'uuid' }
}

let evaluations = 0

/** Compiles a where that counts its evaluations. */
function counted(where: string, params: Record<string, string> = {}): CompiledWhere {
  const compiled = compileWhere({ where, params, columns })
  return {
    ...compiled,
    matchesValues: (row) => {
      evaluations += 1
      return compiled.matchesValues(row)
    }
  }
}

beforeAll(async () => {
  await loadParser()
})

describe('createShapeRouter', () => {
  it('with 10,000 `col = const` shapes, evaluates only the shapes indexed under the row value', () => {
    const router = createShapeRouter<number>()
    for (let i = 0; i < 10_000; i++) router.add(`owner-${i}`, 'items', counted('owner_id = $1', { 1: String(i) }), i)
    router.add('like', 'items', counted("title LIKE 'a%'"), -1)
    router.add('fallback', 'items', counted("title NOT LIKE 'a%'"), -2)
    expect(router.size).toBe(10_002)

    evaluations = 0
    expect(router.route('items', { id: '1', owner_id: '4242', title: 'b' }).sort()).toEqual([-2, 4242])
    expect(evaluations).toBe(2)

    evaluations = 0
    expect(router.route('items', { id: '1', owner_id: '4242', title: 'apple' }).sort()).toEqual([-1, 4242])
    expect(evaluations).toBe(3)

    evaluations = 0
    expect(router.route('items', { id: '1', owner_id: null, title: 'b' })).toEqual([-2])
    expect(evaluations).toBe(1)
    expect(router.route('other_table', { owner_id: '1' })).toEqual([])
  })

  it('indexes IN lists, ANY arrays and AND-combinations, and normalises values per type', () => {
    const router = createShapeRouter<string>()
    router.add('in', 'items', counted("id IN (1, '2', 3.0)"), 'in')
    router.add('any', 'items', counted("id = ANY('{7,8}')"), 'any')
    router.add('and', 'items', counted("owner_id = 5 AND title = 'x' AND price > 1"), 'and')
    router.add('uuid', 'items', counted("uid = 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'"), 'uuid')
    router.add('numeric', 'items', counted('price = 1.5'), 'numeric')
    router.add('all', 'items', null, 'all')

    evaluations = 0
    expect(router.route('items', { id: '3', owner_id: '9', title: 'y', price: '0', uid: null }).sort()).toEqual([
      'all',
      'in'
    ])
    expect(evaluations).toBe(1)
    expect(router.route('items', { id: '8', owner_id: '5', title: 'x', price: '2', uid: null }).sort()).toEqual([
      'all',
      'and',
      'any'
    ])
    expect(router.route('items', { id: '0', owner_id: '5', title: 'x', price: '0.5', uid: null }).sort()).toEqual([
      'all'
    ])
    expect(
      router
        .route('items', {
          id: '0',
          owner_id: '0',
          title: '',
          price: '1.50',
          uid: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'
        })
        .sort()
    ).toEqual(['all', 'numeric', 'uuid'])
  })

  it('removes and replaces shapes', () => {
    const router = createShapeRouter<string>()
    router.add('a', 'items', counted('id = 1'), 'first')
    router.add('a', 'items', counted('id = 2'), 'second')
    expect(router.size).toBe(1)
    expect(router.route('items', { id: '1' })).toEqual([])
    expect(router.route('items', { id: '2' })).toEqual(['second'])
    router.remove('a')
    router.remove('missing')
    expect(router.size).toBe(0)
    expect(router.route('items', { id: '2' })).toEqual([])
  })

  it('never routes to a shape whose equality can not hold', () => {
    const router = createShapeRouter<string>()
    router.add('null', 'items', counted('id = NULL'), 'null')
    evaluations = 0
    expect(router.route('items', { id: '1' })).toEqual([])
    expect(evaluations).toBe(0)
  })

  it('routes a change in steps as in one go, even when other rows are routed between the steps', () => {
    const router = createShapeRouter<string>()
    router.add('owner', 'items', counted('owner_id = 5'), 'owner')
    router.add('title', 'items', counted("title LIKE 'a%'"), 'title')
    router.add('not', 'items', counted("title NOT LIKE '%z%'"), 'not')
    router.add('price', 'items', counted('price > 1'), 'price')
    const old = { id: '1', owner_id: '5', title: 'apple', price: '0' }
    const next = { id: '1', owner_id: '6', title: 'zebra', price: '2' }
    const whole = router.routeChange('items', old, next)

    const route = router.startChange('items', old, next)
    evaluations = 0
    let steps = 0
    for (;;) {
      steps += 1
      if (route.judge(() => true)) break
      // another row between the steps: its probes must not change what this change's shapes are judged on
      router.routeChange('items', { ...old, id: '2' }, null)
    }
    expect(steps).toBe(4)
    expect(route.routed).toEqual(whole)
    expect(route.judge(() => true)).toBe(true)
    expect(router.startChange('other', old, next).judge(() => true)).toBe(true)
  })
})
