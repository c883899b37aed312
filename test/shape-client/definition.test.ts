import { describe, expect, it } from 'vitest'
import {
  curlCommand,
  electricClientCode,
  ShapeDraftSchema,
  shapeParams
} from '../../src/shared/shape-client/definition'
import { maskHeaders, maskUrl, ShapeRecorder } from '../../src/shared/shape-client/recorder'

const definition = ShapeDraftSchema.parse({
  table: 'issues',
  columns: ['id', 'title'],
  where: 'priority <= $1',
  params: ['2'],
  replica: 'full'
})
const target = {
  url: 'http://127.0.0.1:3000/v1/shape',
  headers: { authorization: "Bearer it's" },
  params: { secret: 's3' }
}

describe('shape definitions', () => {
  it('become the query parameters the official client sends', () => {
    expect(shapeParams(definition)).toEqual({
      table: 'issues',
      columns: '"id","title"',
      where: 'priority <= $1',
      'params[1]': '2',
      replica: 'full'
    })
    expect(shapeParams(ShapeDraftSchema.parse({ table: 'users' }))).toEqual({ table: 'users' })
  })

  it('copy as curl, shell-quoted', () => {
    expect(curlCommand(definition, target, '-1')).toBe(
      `curl -i 'http://127.0.0.1:3000/v1/shape?columns=%22id%22%2C%22title%22&log=full&offset=-1&params%5B1%5D=2&replica=full&secret=s3&table=issues&where=priority+%3C%3D+%241' \\\n  -H 'authorization: Bearer it'\\''s'`
    )
  })

  it('copy as @electric-sql/client code', () => {
    const code = electricClientCode({ ...definition, log: 'changes_only' }, target, { offset: 'now', live: 'sse' })
    expect(code).toContain(`import { Shape, ShapeStream } from '@electric-sql/client'`)
    expect(code).toContain('"where": "priority <= $1"')
    expect(code).toContain('"params": [\n      "2"\n    ]')
    expect(code).toContain(`offset: 'now',`)
    expect(code).toContain(`log: "changes_only",`)
    expect(code).toContain('liveSse: true,')
    expect(code.startsWith('import')).toBe(true)
    expect(electricClientCode(definition, target, { offset: '-1', live: 'off', headerBrand: 'service' })).toMatch(
      /^\/\/ This server sends service-\* headers/
    )
  })

  it('warn, for a where with a subquery, that the Shape class keeps rows that moved out', () => {
    const subquery = { ...definition, where: 'project_id in (select id FROM projects WHERE NOT archived)' }
    const code = electricClientCode(subquery, target, { offset: '-1', live: 'long-poll' })
    expect(code).toMatch(/^\/\/ This where has a subquery: Shape ignores move-out \/ move-in events/)
    expect(code).toContain('@tanstack/electric-db-collection')
    expect(electricClientCode(definition, target, { offset: '-1', live: 'long-poll' })).not.toContain('subquery')
  })
})

describe('recorder', () => {
  it('masks secrets in URLs and headers', () => {
    expect(maskUrl('http://h/v1/shape?table=t&secret=supersecretvalue')).toBe(
      'http://h/v1/shape?table=t&secret=supe%E2%80%A6%2816+chars%29'
    )
    expect(
      maskHeaders([
        ['Authorization', 'Bearer token-123456'],
        ['x-other', 'v']
      ])
    ).toEqual([
      ['Authorization', 'Bear…(19 chars)'],
      ['x-other', 'v']
    ])
    const recorder = new ShapeRecorder({ maxEntries: 10 })
    for (let i = 0; i < 25; i++) recorder.note('info', `n${i}`)
    expect(recorder.entries.length).toBeLessThanOrEqual(10)
    expect(recorder.entries.at(-1)).toMatchObject({ text: 'n24' })
  })
})
