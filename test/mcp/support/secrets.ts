import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll } from 'vitest'

/** OAuth tokens as a store keeps them, and as JSON. */
export const tokens = {
  accessToken: 'at-0123456789abcdef',
  refreshToken: 'rt-0123456789abcdef',
  expiresAt: 2_000_000_000
}
export const tokensJson = JSON.stringify(tokens)
/** Values a store must give back byte for byte. */
export const awkwardSecrets = {
  json: JSON.stringify({
    accessToken: 'at-'.padEnd(1200, 'x'),
    refreshToken: 'rt-0123456789abcdef',
    expiresAt: 2_000_000_000
  }),
  unicode: 'pässwörd ✓ 😀 日本',
  newlines: 'line one\nline two',
  trailingNewline: 'ends with a newline\n',
  spaces: '  leading and trailing  ',
  shell: `'"\\$(id)\`;|&<>`,
  large: 'x'.repeat(64 * 1024)
}
/** Equality without printing 64 KiB into the report when it fails. */
export const sameText = (actual: string | undefined, expected: string) =>
  actual === expected || `${actual?.length ?? 'undefined'} characters, expected ${expected.length}`
export const client = {
  clientId: 'client-1',
  issuer: 'http://127.0.0.1:1/',
  redirect_uris: ['http://127.0.0.1:2/oauth/callback/demo'],
  client_id_issued_at: 1
}

/** A fresh folder for the describe block that calls this, removed after it. */
export function folderForBlock(prefix: string): () => string {
  let dir = ''
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), prefix))
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))
  return () => dir
}
