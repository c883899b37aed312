import { describe, expect, it } from 'vitest'
import {
  AUTH_MODES,
  authFields,
  displayValue,
  issuesOf,
  parseValue,
  transportFields,
  type FieldSpec
} from '../../src/renderer/features/mcp/entry-form'

const field = (kind: FieldSpec['kind'], optional = true): FieldSpec => ({ key: 'f', kind, optional })
const names = (fields: FieldSpec[]) => fields.map(({ key, kind, optional }) => `${key}:${kind}${optional ? '?' : ''}`)

describe('the MCP server form’s fields, read from the contract’s schemas', () => {
  it.each([
    ['stdio', ['command:string', 'args:lines?', 'env:pairs?', 'cwd:string?', 'timeoutMs:number?', 'disabled:boolean?']],
    ['http', ['url:string', 'headers:pairs?', 'timeoutMs:number?', 'disabled:boolean?']],
    ['websocket', []]
  ])('transport %s', (transport, expected) => {
    expect(names(transportFields(transport))).toEqual(expected)
  })

  it.each([
    ['none', []],
    ['apiKey', ['key:secret', 'headerName:string?', 'valuePrefix:string?']],
    [
      'clientCredentials',
      [
        'tokenUrl:string?',
        'clientId:string',
        'clientSecret:secret?',
        'privateKey:secretText?',
        'signingAlgorithm:choice?',
        'scopes:lines?',
        'audience:string?',
        'resource:string?'
      ]
    ],
    // the client registration, tokens and callbacks are not typed by a person
    ['authorizationCode', ['scopes:lines?', 'resource:string?', 'redirectUri:string?', 'oauthProviderRef:string?']],
    ['basic', []]
  ])('auth mode %s', (mode, expected) => {
    expect(names(authFields(mode))).toEqual(expected)
  })

  it('offers the signing algorithms of a private key as a choice', () => {
    expect(authFields('clientCredentials').find((field) => field.key === 'signingAlgorithm')?.options).toEqual([
      'RS256',
      'RS384',
      'RS512',
      'PS256',
      'PS384',
      'PS512',
      'ES256',
      'ES384',
      'ES512',
      'EdDSA'
    ])
  })

  it('offers every auth mode the contract knows, each with a form', () => {
    expect([...AUTH_MODES]).toEqual(['none', 'apiKey', 'clientCredentials', 'authorizationCode'])
  })
})

describe('displayValue: what a field’s input shows', () => {
  it.each<[FieldSpec['kind'], unknown, string]>([
    ['string', undefined, ''],
    ['string', null, ''],
    ['string', 'npx', 'npx'],
    ['secret', 'sk-123', 'sk-123'],
    ['number', 20000, '20000'],
    ['number', 0, '0'],
    ['boolean', true, 'true'],
    ['lines', ['-y', '@scope/server', 'stdio'], '-y\n@scope/server\nstdio'],
    ['lines', [], ''],
    ['pairs', { API_TOKEN: '${TOKEN}', MODE: 'a=b' }, 'API_TOKEN=${TOKEN}\nMODE=a=b'],
    ['pairs', {}, '']
  ])('%s %j → %j', (kind, value, shown) => {
    expect(displayValue(field(kind), value)).toBe(shown)
  })
})

describe('parseValue: the typed value of a field’s text', () => {
  it.each<[FieldSpec['kind'], string | boolean, unknown]>([
    ['string', '', undefined],
    ['string', '   ', undefined],
    ['string', ' kept as typed ', ' kept as typed '],
    ['secret', 'sk-123', 'sk-123'],
    ['number', '20000', 20000],
    ['number', '-5', -5],
    ['number', 'soon', Number.NaN],
    ['boolean', true, true],
    ['boolean', false, undefined],
    ['lines', '-y\n@scope/server\n\nstdio', ['-y', '@scope/server', 'stdio']],
    ['lines', ' a b \n', [' a b ']],
    [
      'pairs',
      'API_TOKEN=${TOKEN}\n\nMODE = a=b\nHOST: example.com\nFLAG',
      { API_TOKEN: '${TOKEN}', MODE: 'a=b', HOST: 'example.com', FLAG: '' }
    ],
    ['pairs', '  \n ', undefined]
  ])('%s %j → %j', (kind, text, value) => {
    expect(parseValue(field(kind), text)).toEqual(value)
  })

  it.each<[FieldSpec['kind'], unknown]>([
    ['lines', ['a', 'b c', 'd=e']],
    ['pairs', { A: '1', B: 'x=y' }],
    ['number', 1500],
    ['string', 'node']
  ])('gives back what it showed: %s %j', (kind, value) => {
    expect(parseValue(field(kind), displayValue(field(kind), value))).toEqual(value)
  })
})

describe('issuesOf: validation issues by dotted path, as the form shows them next to fields', () => {
  it.each<[string, unknown, Record<string, RegExp>]>([
    ['a complete stdio entry', { transport: 'stdio', command: 'node', args: ['server.js'] }, {}],
    [
      'a complete http entry with an API key',
      { transport: 'http', url: 'https://mcp.example.com/mcp', auth: { mode: 'apiKey', key: 'k' } },
      {}
    ],
    ['no transport', { command: 'node' }, { transport: /transport must be "http" or "stdio"/ }],
    ['an unknown transport', { transport: 'ws', url: 'ws://x' }, { transport: /transport must be "http" or "stdio"/ }],
    ['an empty command', { transport: 'stdio', command: '' }, { command: /command is empty/ }],
    [
      'a URL that is not http(s)',
      { transport: 'http', url: 'ftp://files.example.com', auth: { mode: 'none' } },
      { url: /must be an http:\/\/ or https:\/\/ URL/ }
    ],
    [
      'a timeout that is not positive',
      { transport: 'stdio', command: 'node', timeoutMs: -5 },
      { timeoutMs: /timeoutMs must be a positive number/ }
    ],
    [
      'an empty API key, named under auth',
      { transport: 'http', url: 'https://h/mcp', auth: { mode: 'apiKey', key: '' } },
      { 'auth.key': /the API key is empty/ }
    ],
    [
      'a secret given by reference',
      { transport: 'http', url: 'https://h/mcp', auth: { mode: 'apiKey', key: 'k', keyRef: 'vault:x' } },
      { auth: /keyRef: secrets are given inline/ }
    ],
    ['a field the entry does not have', { transport: 'stdio', command: 'node', shell: true }, { entry: /shell/ }],
    [
      'several problems: one message each, the first for a path',
      {
        transport: 'http',
        url: 'nope',
        auth: { mode: 'clientCredentials', tokenUrl: 'x', clientId: '', clientSecret: '' }
      },
      {
        url: /URL/,
        'auth.tokenUrl': /URL/,
        'auth.clientId': /clientId is empty/,
        'auth.clientSecret': /clientSecret is empty/
      }
    ]
  ])('%s', (_, entry, expected) => {
    const issues = issuesOf(entry)
    expect(Object.keys(issues).sort()).toEqual(Object.keys(expected).sort())
    for (const [path, message] of Object.entries(expected)) expect(issues[path]).toMatch(message)
  })
})
