import { describe, expect, it } from 'vitest'
import { MaterialisedShape, type Message, type Row } from '../../src/shared/shape-client'
import { ColumnarRowStore } from '../../src/renderer/features/shapes/engine/row-store'

const keysOf = (store: ColumnarRowStore) => Array.from({ length: store.size }, (_, index) => store.rowAt(index)?.key)

describe('ColumnarRowStore: a shape’s rows in columns, as a Map would hold them', () => {
  it('gives back each row’s text exactly, integers and lookalikes included, and absent columns as absent', () => {
    const store = new ColumnarRowStore()
    const rows: Row[] = [
      { id: '1', n: '0', big: '123456789012345', bigger: '1234567890123456', neg: '-42' },
      { id: '2', n: '007', big: '-0', bigger: '1.5', neg: '1e3' },
      { id: '3', n: null, big: '', bigger: ' 1', neg: '+1' },
      { id: '4' }
    ]
    rows.forEach((row, index) => store.set(`k${index}`, row))
    rows.forEach((row, index) => expect(store.get(`k${index}`)).toEqual(row))
    expect(store.rowAt(3)?.cells).toEqual(['4', undefined, undefined, undefined, undefined])
    expect(store.columns()).toEqual(['id', 'n', 'big', 'bigger', 'neg'])
  })

  it('keeps text of any length and any characters, and an update that rewrites every value', () => {
    const store = new ColumnarRowStore()
    const long = 'x'.repeat(200_000)
    const rows: Row[] = [
      { id: 'a', body: long },
      { id: 'b', body: 'ünïcødé – 漢字 – 🙂' },
      { id: 'c', body: `${long}y` }
    ]
    for (let round = 0; round < 3; round += 1) rows.forEach((row) => store.set(row.id as string, row))
    for (let index = 0; index < 3_000; index += 1)
      store.set(`filler-${index}`, { id: String(index), body: `v${index}` })
    rows.forEach((row) => expect(store.get(row.id as string)).toEqual(row))
    store.set('a', { id: 'a', body: 'short now' })
    expect(store.get('a')).toEqual({ id: 'a', body: 'short now' })
    expect(store.get('filler-2999')).toEqual({ id: '2999', body: 'v2999' })
  })

  it('keeps a Map’s order: an update stays in place, a key deleted and inserted again goes last', () => {
    const store = new ColumnarRowStore()
    for (const key of ['a', 'b', 'c', 'd']) store.set(key, { v: key })
    store.set('b', { v: 'B' })
    store.delete('a')
    store.set('a', { v: 'again' })
    expect(keysOf(store)).toEqual(['b', 'c', 'd', 'a'])
    expect(store.rowAt(0)?.cells).toEqual(['B'])
    expect(store.has('a') && !store.has('x')).toBe(true)
    expect(store.delete('x')).toBe(false)
  })

  it('finds the n-th row among many deletes, and squeezes them out without changing what it holds', () => {
    const store = new ColumnarRowStore()
    const reference = new Map<string, Row>()
    for (let id = 0; id < 20_000; id += 1) {
      store.set(`k${id}`, { id: String(id), status: id % 3 === 0 ? 'open' : 'closed' })
      reference.set(`k${id}`, { id: String(id), status: id % 3 === 0 ? 'open' : 'closed' })
    }
    // delete three rows in four (compaction happens along the way), update some, insert a few more
    for (let id = 0; id < 20_000; id += 1) {
      if (id % 4 === 0) continue
      store.delete(`k${id}`)
      reference.delete(`k${id}`)
    }
    for (let id = 0; id < 20_000; id += 400) {
      store.set(`k${id}`, { id: String(id), status: 'updated' })
      reference.set(`k${id}`, { id: String(id), status: 'updated' })
    }
    store.set('new', { id: 'new', status: 'x' })
    reference.set('new', { id: 'new', status: 'x' })
    expect(store.size).toBe(reference.size)
    expect(keysOf(store)).toEqual([...reference.keys()])
    for (const [key, row] of reference) expect(store.get(key)).toEqual(row)
    expect(store.rowAt(store.size)).toBeNull()
  })

  it('forgets everything on clear', () => {
    const store = new ColumnarRowStore()
    store.set('a', { v: '1' })
    store.clear()
    expect(store.size).toBe(0)
    expect(store.get('a')).toBeUndefined()
    store.set('b', { w: '2' })
    expect(store.columns()).toEqual(['w'])
  })

  it('serves MaterialisedShape as its store: merges, deletes and must-refetch as with a Map', () => {
    const columnar = new MaterialisedShape({ log: 'full' }, new ColumnarRowStore())
    const mapped = new MaterialisedShape({ log: 'full' })
    const messages: Message[] = [
      { key: 'a', value: { id: '1', title: 'one', done: 'false' }, headers: { operation: 'insert' } },
      { key: 'b', value: { id: '2', title: 'two', done: 'false' }, headers: { operation: 'insert' } },
      { key: 'a', value: { id: '1', done: 'true' }, headers: { operation: 'update' } },
      { key: 'b', value: { id: '2' }, headers: { operation: 'delete' } },
      { key: 'c', value: { id: '3', title: null, done: 'true' }, headers: { operation: 'insert' } }
    ]
    expect(columnar.apply(messages)).toEqual(mapped.apply(messages))
    expect(keysOf(columnar.rows)).toEqual([...mapped.rows.keys()])
    for (const [key, row] of mapped.rows) expect(columnar.rows.get(key)).toEqual(row)
    columnar.apply([{ headers: { control: 'must-refetch' } }])
    expect(columnar.rows.size).toBe(0)
  })
})
