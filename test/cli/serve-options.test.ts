import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { referenceNotes } from '../../src/main/cli/reference-env'
import { parseServeOptions } from '../../src/main/cli/serve-options'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'syncscope-serve-options-'))
})
afterAll(() => rm(dir, { recursive: true, force: true }))

async function secretFile(name: string, mode: number, text = 'from-the-file\n'): Promise<string> {
  const path = join(dir, name)
  await writeFile(path, text)
  await chmod(path, mode)
  return path
}

describe('the shape API secret without argv', () => {
  it('reads --secret-file (trailing newline dropped) and SYNCSCOPE_SECRET', async () => {
    expect(parseServeOptions(['--secret-file', await secretFile('ok', 0o600)], {}).secret).toBe('from-the-file')
    expect(parseServeOptions([], { SYNCSCOPE_SECRET: 'from-env' }).secret).toBe('from-env')
    expect(parseServeOptions(['--secret', 'from-argv'], { SYNCSCOPE_SECRET: 'from-env' }).secret).toBe('from-argv')
    expect(parseServeOptions([], {}).secret).toBeUndefined()
  })

  it.each([0o644, 0o640, 0o604])('refuses a secret file of mode %o, which other users can read', async (mode) => {
    const path = await secretFile(`open-${mode.toString(8)}`, mode)
    expect(() => parseServeOptions(['--secret-file', path], {})).toThrow(
      `--secret-file ${path} can be read by other users (mode 0${mode.toString(8)}): run chmod 600 ${path}`
    )
  })

  it('names a missing or empty secret file, and refuses --secret with --secret-file', async () => {
    expect(() => parseServeOptions(['--secret-file', join(dir, 'missing')], {})).toThrow(/cannot be read \(ENOENT\)/)
    expect(() => parseServeOptions(['--secret-file', join(dir, 'missing')], {})).not.toThrow(/\n/)
    const empty = await secretFile('empty', 0o600, '\n')
    expect(() => parseServeOptions(['--secret-file', empty], {})).toThrow('must hold the secret on one line')
    expect(() => parseServeOptions(['--secret', 'a', '--secret-file', empty], {})).toThrow(
      'give --secret or --secret-file, not both'
    )
  })
})

describe('opening the shape API to more pages and hosts', () => {
  it('takes repeatable --cors-origin and --allowed-host values', () => {
    const options = parseServeOptions(
      [
        '--cors-origin',
        'http://192.168.1.20:5173/',
        '--cors-origin',
        '*',
        '--allowed-host',
        'devbox.local',
        '--allowed-host',
        '[fd00::5]'
      ],
      {}
    )
    expect(options.corsOrigins).toEqual(['http://192.168.1.20:5173', '*'])
    expect(options.allowedHosts).toEqual(['devbox.local', '[fd00::5]'])
    expect(parseServeOptions([], {})).toMatchObject({ corsOrigins: [], allowedHosts: [] })
  })

  it.each([
    [['--cors-origin', 'http://192.168.1.20:5173/app'], '--cors-origin http://192.168.1.20:5173/app is not an origin'],
    [['--cors-origin', 'evil.test'], '--cors-origin evil.test is not an origin'],
    [['--cors-origin', 'null'], '--cors-origin null is not an origin'],
    [['--allowed-host', 'http://devbox.local'], '--allowed-host must be a host name'],
    [['--allowed-host', 'devbox.local:3000'], '--allowed-host must be a host name']
  ])('refuses %j', (args, message) => {
    expect(() => parseServeOptions(args, {})).toThrow(message)
  })
})

describe('the bounds of the shape server', () => {
  it('has generous defaults: 100,000 shapes, half the free disk (decided at start), 16,384 connections', () => {
    const options = parseServeOptions([], {})
    expect(options.maxShapes).toBe(100_000)
    expect(options.maxDisk).toBeUndefined()
    expect(options.maxConnections).toBe(16_384)
  })

  it.each([
    ['1048576', 1024 ** 2],
    ['500MB', 500 * 1024 ** 2],
    ['500 mib', 500 * 1024 ** 2],
    ['20G', 20 * 1024 ** 3],
    ['1.5GiB', 1.5 * 1024 ** 3],
    ['2t', 2 * 1024 ** 4]
  ])('reads --max-disk %s as %d bytes', (text, bytes) => {
    expect(parseServeOptions(['--max-disk', text], {}).maxDisk).toBe(bytes)
  })

  it.each(['', 'lots', '10 parsecs', '1000', '0.5MB'])('refuses --max-disk %j naming the form', (text) => {
    expect(() => parseServeOptions(['--max-disk', text], {})).toThrow(
      `--max-disk ${text} is not a size of at least 1 MiB: give bytes or a number with K, M, G or T, e.g. 500MB or 20GB`
    )
  })

  it('refuses a --max-shapes or --max-connections that is not a positive whole number', () => {
    expect(parseServeOptions(['--max-shapes', '10', '--max-connections', '64'], {})).toMatchObject({
      maxShapes: 10,
      maxConnections: 64
    })
    expect(() => parseServeOptions(['--max-shapes', '0'], {})).toThrow('--max-shapes must be at least 1')
    expect(() => parseServeOptions(['--max-connections', 'many'], {})).toThrow('--max-connections must be a number')
    expect(() => parseServeOptions(['--max-shapes', '2.5'], {})).toThrow('--max-shapes must be a whole number')
  })
})

describe('the live settings', () => {
  it('keeps an SSE stream open 58 s by default; --sse-lifetime sets it, within a second and an hour', () => {
    expect(parseServeOptions([], {}).sseLifetime).toBe(58_000)
    expect(parseServeOptions(['--sse-lifetime', '4000'], {}).sseLifetime).toBe(4_000)
    expect(() => parseServeOptions(['--sse-lifetime', '999'], {})).toThrow(
      '--sse-lifetime must be at least 1000 milliseconds'
    )
    expect(() => parseServeOptions(['--sse-lifetime', '3600001'], {})).toThrow('--sse-lifetime must be at most an hour')
  })
})

describe("the reference's environment variables", () => {
  const url = 'postgresql://postgres:password@db:5432/electric?sslmode=disable'

  it('stand in for the reference: DATABASE_URL, the electric brand, and each value', () => {
    expect(
      parseServeOptions([], {
        DATABASE_URL: url,
        ELECTRIC_SECRET: 's',
        ELECTRIC_PORT: '3100',
        ELECTRIC_CACHE_MAX_AGE: '5',
        ELECTRIC_CACHE_STALE_AGE: '6',
        ELECTRIC_SHAPE_CHUNK_BYTES_THRESHOLD: '20971520',
        ELECTRIC_MAX_SHAPES: '10000'
      })
    ).toMatchObject({
      database: url,
      secret: 's',
      headerBrand: 'electric',
      port: 3100,
      cacheMaxAge: 5,
      cacheStaleAge: 6,
      chunkBytes: 20971520,
      maxShapes: 10000
    })
  })

  it('lose to flags, and a value a flag overrides is not even read', () => {
    const env = {
      DATABASE_URL: url,
      ELECTRIC_SECRET: 'from-env',
      ELECTRIC_PORT: 'not-a-port',
      ELECTRIC_CACHE_MAX_AGE: '5',
      ELECTRIC_CACHE_STALE_AGE: '6',
      ELECTRIC_SHAPE_CHUNK_BYTES_THRESHOLD: '2000',
      ELECTRIC_MAX_SHAPES: '10'
    }
    const flags = ['--database', 'embedded', '--secret', 'from-flag', '--port', '4000', '--header-brand', 'service']
    const more = ['--cache-max-age', '1', '--cache-stale-age', '2', '--chunk-bytes', '3000', '--max-shapes', '4']
    expect(parseServeOptions([...flags, ...more], env)).toMatchObject({
      database: 'embedded',
      secret: 'from-flag',
      port: 4000,
      headerBrand: 'service',
      cacheMaxAge: 1,
      cacheStaleAge: 2,
      chunkBytes: 3000,
      maxShapes: 4
    })
  })

  it('ELECTRIC_INSECURE=true serves without a secret; a secret flag still wins over it', () => {
    expect(parseServeOptions([], { ELECTRIC_INSECURE: 'true' }).secret).toBeUndefined()
    expect(parseServeOptions([], { ELECTRIC_INSECURE: 'TRUE' }).headerBrand).toBe('electric')
    expect(parseServeOptions(['--secret', 'x'], { ELECTRIC_INSECURE: '1' }).secret).toBe('x')
    expect(() => parseServeOptions([], { ELECTRIC_INSECURE: 'true', SYNCSCOPE_SECRET: 'y' })).toThrow(
      'SYNCSCOPE_SECRET and ELECTRIC_INSECURE=true contradict each other: unset one'
    )
    expect(parseServeOptions([], { ELECTRIC_SECRET: 'e', SYNCSCOPE_SECRET: 'y' }).secret).toBe('y')
  })

  it('without them, nothing changes: DATABASE_URL alone is not followed (and says so), empty values are unset', () => {
    const alone = parseServeOptions([], { DATABASE_URL: url, ELECTRIC_PORT: '' })
    expect(alone).toMatchObject({ database: 'embedded', headerBrand: 'service', port: 3000 })
    expect(alone.secret).toBeUndefined()
    expect(referenceNotes({ DATABASE_URL: url }, 'embedded')).toEqual([
      'DATABASE_URL is not followed without the reference\'s ELECTRIC_SECRET or ELECTRIC_INSECURE: serving the embedded Postgres (--database "$DATABASE_URL" follows it)'
    ])
    expect(referenceNotes({ DATABASE_URL: url }, url)).toEqual([])
    expect(
      referenceNotes({ ELECTRIC_INSECURE: 'true', ELECTRIC_STORAGE_DIR: '/x', ELECTRIC_LOG_LEVEL: 'debug' }, 'x')
    ).toEqual(["the reference's ELECTRIC_LOG_LEVEL, ELECTRIC_STORAGE_DIR: not read by Syncscope"])
  })
})
