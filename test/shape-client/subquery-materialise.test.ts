import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { MaterialisedShape } from '../../src/shared/shape-client/materialise'
import { MessageArraySchema, type Message } from '../../src/shared/shape-client/messages'
import { isIncluded, satisfiedDisjuncts } from '../../src/shared/shape-client/tags'

// Messages exactly as /work/shared/notes/subqueries.md §2 puts them on the wire, for
// tasks WHERE project_id IN (SELECT id FROM projects WHERE NOT archived) [OR owner_id = $1].
const hash = (value: string | null) =>
  createHash('md5')
    .update(`stack-1handle-1${value === null ? 'NULL' : `v:${value}`}`)
    .digest('hex')
const P1 = hash('1')
const P2 = hash('2')
const key = (id: number) => `"public"."tasks"/"${id}"`
const row = (id: number, project: string | null, owner = 'u9') => ({
  id: String(id),
  project_id: project,
  owner_id: owner,
  status: 'todo'
})

type Headers = Record<string, unknown>
const snapshotRow = (id: number, project: string | null, headers: Headers = {}): Message => ({
  key: key(id),
  value: row(id, project),
  headers: {
    operation: 'insert',
    relation: ['public', 'tasks'],
    tags: [hash(project)],
    active_conditions: [true],
    ...headers
  }
})
const moveInRow = (id: number, project: string, headers: Headers = {}): Message =>
  snapshotRow(id, project, { is_move_in: true, ...headers })
const event = (kind: 'move-in' | 'move-out', patterns: Array<{ pos: number; value: string }>, txid = 812): Message => ({
  headers: { event: kind, patterns, txids: [txid] }
})
const upToDate: Message = { headers: { control: 'up-to-date', global_last_seen_lsn: '1234' } }
const snapshotEnd: Message = { headers: { control: 'snapshot-end', xmin: '813', xmax: '814', xip_list: [] } }

/** Every message goes through the wire schema first, as the stream parses it. */
const wire = (messages: Message[]): Message[] => MessageArraySchema.parse(JSON.parse(JSON.stringify(messages)))
const keys = (shape: MaterialisedShape) => [...shape.rows.keys()].sort()

describe('MaterialisedShape on a subquery shape', () => {
  it('keeps each row’s tags and active conditions from the initial snapshot', () => {
    const shape = new MaterialisedShape({ log: 'full' })
    shape.apply(wire([snapshotRow(1, '1'), snapshotRow(2, '2'), upToDate]))
    expect(keys(shape)).toEqual([key(1), key(2)])
    expect(shape.membership(key(1))).toEqual({ tags: [[P1]], activeConditions: [true] })
  })

  it('drops, on a move-out, exactly the rows whose tag holds the pattern (the server sends no delete)', () => {
    const shape = new MaterialisedShape({ log: 'full' })
    shape.apply(wire([snapshotRow(1, '1'), snapshotRow(2, '1'), snapshotRow(3, '2'), upToDate]))
    const moveOut = event('move-out', [{ pos: 0, value: P1 }])
    const changes = shape.apply(wire([moveOut, upToDate]))
    expect(keys(shape)).toEqual([key(3)])
    expect(changes.map((change) => change.kind === 'delete' && [change.key, change.message])).toEqual([
      [key(1), moveOut],
      [key(2), moveOut]
    ])
    expect(shape.membership(key(1))).toBeNull()
  })

  it('adds a move-in’s rows once, after its event, up to snapshot-end', () => {
    const shape = new MaterialisedShape({ log: 'full' })
    shape.apply(wire([snapshotRow(1, '1'), upToDate]))
    const changes = shape.apply(
      wire([
        event('move-in', [{ pos: 0, value: P2 }], 813),
        moveInRow(2, '2'),
        moveInRow(3, '2'),
        moveInRow(4, '2'),
        snapshotEnd,
        upToDate
      ])
    )
    expect(changes.map((change) => change.kind)).toEqual(['insert', 'insert', 'insert'])
    expect(keys(shape)).toEqual([key(1), key(2), key(3), key(4)])
    // And the moved-in rows leave again with their value.
    shape.apply(wire([event('move-out', [{ pos: 0, value: P2 }])]))
    expect(keys(shape)).toEqual([key(1)])
  })

  it('keeps a row another disjunct still holds, and lets a move-in flip its condition back without a row', () => {
    // S_or: tags ["<hash>/", "/1"], positions 0 (the subquery) and 1 (owner_id = $1).
    const orRow = (id: number, project: string, ownerMatches: boolean): Message => ({
      key: key(id),
      value: row(id, project, ownerMatches ? 'u1' : 'u9'),
      headers: {
        operation: 'insert',
        relation: ['public', 'tasks'],
        tags: [`${hash(project)}/`, '/1'],
        active_conditions: [true, ownerMatches]
      }
    })
    const shape = new MaterialisedShape({ log: 'full' })
    shape.apply(wire([orRow(1, '1', true), orRow(2, '1', false), upToDate]))
    shape.apply(wire([event('move-out', [{ pos: 0, value: P1 }])]))
    expect(keys(shape)).toEqual([key(1)])
    const held = shape.membership(key(1))!
    expect(held.activeConditions).toEqual([false, true])
    expect(satisfiedDisjuncts(held)).toEqual([1])
    expect(shape.apply(wire([event('move-in', [{ pos: 0, value: P1 }])]))).toEqual([])
    expect(shape.membership(key(1))!.activeConditions).toEqual([true, true])
    expect(satisfiedDisjuncts(shape.membership(key(1))!)).toEqual([0, 1])
  })

  it('follows a row whose linking column changed: removed_tags leave the index, the new tag is what a move-out matches', () => {
    const shape = new MaterialisedShape({ log: 'full' })
    shape.apply(wire([snapshotRow(1, '1'), upToDate]))
    shape.apply(
      wire([
        {
          key: key(1),
          value: { id: '1', project_id: '2' },
          headers: {
            operation: 'update',
            tags: [P2],
            removed_tags: [P1],
            active_conditions: [true],
            lsn: '1300',
            op_position: 0,
            txids: [900]
          }
        }
      ])
    )
    expect(shape.apply(wire([event('move-out', [{ pos: 0, value: P1 }])]))).toEqual([])
    expect(keys(shape)).toEqual([key(1)])
    // An update that carries no tags keeps the row's.
    shape.apply(wire([{ key: key(1), value: { id: '1', status: 'done' }, headers: { operation: 'update' } }]))
    expect(shape.membership(key(1))).toEqual({ tags: [[P2]], activeConditions: [true] })
    shape.apply(wire([event('move-out', [{ pos: 0, value: P2 }])]))
    expect(keys(shape)).toEqual([])
  })

  it('nets out a row that moved out and back in within one batch: an update, or nothing when it came back equal', () => {
    const shape = new MaterialisedShape({ log: 'full' })
    shape.apply(wire([snapshotRow(1, '1'), snapshotRow(2, '1'), upToDate]))
    const changes = shape.apply(
      wire([
        event('move-out', [{ pos: 0, value: P1 }], 900),
        event('move-in', [{ pos: 0, value: P1 }], 901),
        moveInRow(1, '1'),
        { ...moveInRow(2, '1'), value: { ...row(2, '1'), status: 'done' } },
        snapshotEnd
      ])
    )
    expect(changes.map((change) => [change.kind, 'key' in change && change.key])).toEqual([['update', key(2)]])
    expect(changes[0]).toMatchObject({ kind: 'update', changed: ['status'] })
    expect(keys(shape)).toEqual([key(1), key(2)])
  })

  it('matches a pattern at its position only: nested and composite tags hold several slots', () => {
    const shape = new MaterialisedShape({ log: 'full' })
    // One disjunct of two subquery positions, e.g. project_id IN (…) AND owner_id IN (…).
    const both = (id: number, project: string, owner: string): Message => ({
      key: key(id),
      value: row(id, project, owner),
      headers: { operation: 'insert', tags: [`${hash(project)}/${hash(owner)}`], active_conditions: [true, true] }
    })
    shape.apply(wire([both(1, '1', '1'), both(2, '2', '1'), upToDate]))
    // The hash of '1' at position 1 is not the one at position 0: only row 1 (project 1) goes.
    shape.apply(wire([event('move-out', [{ pos: 0, value: P1 }])]))
    expect(keys(shape)).toEqual([key(2)])
    shape.apply(wire([event('move-out', [{ pos: 1, value: P1 }])]))
    expect(keys(shape)).toEqual([])
  })

  it('reads a pre-1.6 flat tag as position 0, and a NULL linking value’s tag as its own hash', () => {
    const shape = new MaterialisedShape({ log: 'full' })
    shape.apply(wire([snapshotRow(1, null), snapshotRow(2, 'NULL')]))
    expect(hash(null)).not.toBe(hash('NULL'))
    shape.apply(wire([event('move-out', [{ pos: 0, value: hash('NULL') }])]))
    expect(keys(shape)).toEqual([key(1)])
  })

  it('forgets tags on must-refetch and on a delete, so a later move-out does not touch a row inserted again', () => {
    const shape = new MaterialisedShape({ log: 'full' })
    shape.apply(wire([snapshotRow(1, '1')]))
    // A PK-changing update's delete carries new ++ removed tags; the insert the new ones.
    shape.apply(
      wire([
        {
          key: key(1),
          value: { id: '1' },
          headers: { operation: 'delete', tags: [P2, P1], active_conditions: [true] }
        },
        snapshotRow(1, '2')
      ])
    )
    shape.apply(wire([event('move-out', [{ pos: 0, value: P1 }])]))
    expect(keys(shape)).toEqual([key(1)])
    shape.apply(wire([{ headers: { control: 'must-refetch' } }, snapshotRow(1, '3')]))
    shape.apply(wire([event('move-out', [{ pos: 0, value: P2 }])]))
    expect(keys(shape)).toEqual([key(1)])
  })

  it('treats rows without tags as always included, and ignores events it does not know', () => {
    expect(isIncluded({ tags: [], activeConditions: [] })).toBe(true)
    expect(isIncluded({ tags: [['a', '']], activeConditions: [false, false] })).toBe(false)
    const shape = new MaterialisedShape({ log: 'full' })
    shape.apply(wire([{ key: key(1), value: row(1, '1'), headers: { operation: 'insert' } }]))
    expect(
      shape.apply(wire([{ headers: { event: 'something-new' } }, event('move-out', [{ pos: 0, value: P1 }])]))
    ).toEqual([])
    expect(keys(shape)).toEqual([key(1)])
  })

  it('refuses a move event whose patterns are not {pos, value}', () => {
    expect(() =>
      wire([{ headers: { event: 'move-out', patterns: [{ pos: '0', value: P1 }] } } as unknown as Message])
    ).toThrow()
  })
})
