import { describe, expect, it } from 'vitest'
import { ShapeDraftSchema, ShapeStream, ShapeStreamError } from '../../src/shared/shape-client'
import {
  EMPTY_SUBSET_FORM,
  parseSubsetForm,
  previewSubsetRequest,
  subsetFailureOf,
  subsetOf,
  type SubsetForm
} from '../../src/renderer/features/shapes/subset-form'

const form = (fields: Partial<SubsetForm>): SubsetForm => ({ ...EMPTY_SUBSET_FORM, ...fields })

describe('subsetOf: the Subset panel’s text fields as the subset the client sends', () => {
  it.each<[string, Partial<SubsetForm>, object]>([
    ['an empty form: no field at all', {}, {}],
    ['blank fields are left out', { where: '  ', orderBy: ' ', limit: ' ', offset: '' }, {}],
    ['a where as typed (not trimmed)', { where: ' priority > 1 ' }, { where: ' priority > 1 ' }],
    [
      'limit and offset become numbers',
      { orderBy: 'id', limit: '10', offset: '0' },
      { orderBy: 'id', limit: 10, offset: 0 }
    ],
    ['a half-typed number is sent as what it is (NaN, refused by the schema)', { limit: '1e' }, { limit: Number.NaN }],
    [
      'params by trimmed key; a param without a key is dropped; values kept as typed',
      {
        params: [
          { key: ' 1 ', value: ' a ' },
          { key: '', value: 'orphan' },
          { key: '2', value: '' }
        ]
      },
      { params: { '1': ' a ', '2': '' } }
    ],
    ['only keyless params: no params', { params: [{ key: ' ', value: 'x' }] }, {}]
  ])('%s', (_, fields, expected) => {
    const subset = subsetOf(form(fields))
    const defined = Object.fromEntries(Object.entries(subset).filter(([, value]) => value !== undefined))
    expect(defined).toEqual(expected)
  })
})

describe('parseSubsetForm: what is wrong with the form before anything is sent, by field', () => {
  it.each<[string, Partial<SubsetForm>, Record<string, RegExp>]>([
    ['a limit without order by', { limit: '5' }, { order_by: /orderBy is required/ }],
    ['an offset without order by', { offset: '5' }, { order_by: /orderBy is required/ }],
    ['a limit of 0', { orderBy: 'id', limit: '0' }, { limit: /.+/ }],
    ['a fractional limit', { orderBy: 'id', limit: '2.5' }, { limit: /.+/ }],
    ['a limit that is not a number', { orderBy: 'id', limit: 'ten' }, { limit: /.+/ }],
    ['a negative offset', { orderBy: 'id', offset: '-1' }, { offset: /.+/ }],
    [
      'a param key that is not a placeholder number',
      { params: [{ key: 'owner', value: 'x' }] },
      { params: /placeholder numbers/ }
    ]
  ])('%s', (_, fields, expected) => {
    const parsed = parseSubsetForm(form(fields))
    expect(parsed.subset).toBeNull()
    expect(Object.keys(parsed.fields ?? {}).sort()).toEqual(Object.keys(expected).sort())
    for (const [field, message] of Object.entries(expected)) expect(parsed.fields?.[field as 'limit']).toMatch(message)
  })

  it.each<[string, Partial<SubsetForm>, object]>([
    ['an empty form', {}, {}],
    [
      'a where with its params',
      { where: 'owner_id = $1', params: [{ key: '1', value: 'u1' }] },
      { where: 'owner_id = $1', params: { '1': 'u1' } }
    ],
    [
      'a page: order by, limit, offset',
      { orderBy: 'id DESC', limit: '20', offset: '40' },
      { orderBy: 'id DESC', limit: 20, offset: 40 }
    ]
  ])('accepts %s', (_, fields, expected) => {
    const parsed = parseSubsetForm(form(fields))
    expect(parsed.fields).toBeNull()
    expect(parsed.subset).toEqual(expect.objectContaining(expected))
  })
})

describe('previewSubsetRequest: the body and the URL the stream would send now', () => {
  const config = {
    url: 'http://127.0.0.1:3000/v1/shape',
    params: { table: 'issues', where: 'priority > $1', 'params[1]': '2' }
  }
  // what a fresh stream of the shape would send: the page gets these with each update of the session
  const stream = new ShapeStream({
    ...config,
    headers: { authorization: 'Bearer hidden' },
    log: ShapeDraftSchema.parse({ table: 'issues', log: 'changes_only' }).log,
    live: 'long-poll',
    offset: '-1'
  })

  it.each<[string, Partial<SubsetForm>, object, Record<string, string>]>([
    [
      'an empty subset: where true in the body, subset__where=true in the URL',
      {},
      { where: 'true' },
      { subset__where: 'true' }
    ],
    [
      'every field',
      { where: 'id < $1', params: [{ key: '1', value: '9' }], orderBy: 'id', limit: '3', offset: '1' },
      { where: 'id < $1', params: { '1': '9' }, order_by: 'id', limit: 3, offset: 1 },
      {
        subset__where: 'id < $1',
        subset__params: '{"1":"9"}',
        subset__order_by: 'id',
        subset__limit: '3',
        subset__offset: '1'
      }
    ]
  ])('%s', (_, fields, body, urlSubset) => {
    const parsed = parseSubsetForm(form(fields))
    const preview = previewSubsetRequest(config, stream.protocolParams(), parsed.subset!)
    expect(JSON.parse(preview.body)).toEqual(body)
    const url = new URL(preview.getUrl)
    expect(`${url.origin}${url.pathname}`).toBe('http://127.0.0.1:3000/v1/shape')
    const query = Object.fromEntries(url.searchParams)
    // the shape's own parameters and the stream's protocol ones stay; credentials are never in the preview
    expect(query).toEqual({
      table: 'issues',
      where: 'priority > $1',
      'params[1]': '2',
      offset: '-1',
      log: 'changes_only',
      ...urlSubset
    })
    expect(`${preview.body}${preview.getUrl}`).not.toContain('hidden')
  })
})

describe('subsetFailureOf: the server’s complaints sorted onto the form', () => {
  const serverError = (status: number, body: unknown) =>
    new ShapeStreamError('client', `HTTP ${status}`, 'http://h/v1/shape', status, JSON.stringify(body))

  it.each<[string, unknown, 'GET' | 'POST', object]>([
    [
      'a network failure: its message, no status',
      new TypeError('fetch failed'),
      'POST',
      { fields: {}, message: 'fetch failed', status: null, tooLong: false }
    ],
    [
      'field errors under their fields, lists joined',
      serverError(400, {
        message: 'Invalid request',
        errors: { subset: { where: ['bad where', 'at 3'], limit: 'must be positive' } }
      }),
      'POST',
      { fields: { where: 'bad where; at 3', limit: 'must be positive' }, message: null, status: 400, tooLong: false }
    ],
    [
      'a complaint about no field of the form goes above the result',
      serverError(400, { errors: { subset: { columns: ['not allowed in a subset'] } } }),
      'POST',
      { fields: {}, message: 'columns: not allowed in a subset', status: 400, tooLong: false }
    ],
    [
      'order_by keeps the server’s name',
      serverError(400, { errors: { subset: { order_by: ['expressions are not allowed'] } } }),
      'GET',
      { fields: { order_by: 'expressions are not allowed' }, message: null, status: 400, tooLong: false }
    ],
    [
      'a body that is not the validation shape: the error’s own message',
      serverError(500, { message: 'boom' }),
      'POST',
      { fields: {}, message: 'HTTP 500', status: 500, tooLong: false }
    ],
    ['414 on a GET: too long, POST is the remedy', serverError(414, {}), 'GET', { status: 414, tooLong: true }],
    [
      '414 on a POST is not about the URL length of a subset',
      serverError(414, {}),
      'POST',
      { status: 414, tooLong: false }
    ]
  ])('%s', (_, error, method, expected) => {
    expect(subsetFailureOf(error, method)).toMatchObject(expected)
  })
})
