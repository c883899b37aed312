import { randomBytes } from 'node:crypto'
import { KeychainError } from './keychain-error'
import type { SecretStore } from './store'

/**
 * The Windows Credential Manager holds at most 2560 bytes of UTF-16 per item, less than an OAuth token set with a JWT
 * access token. A longer value goes into parts `<account>#<generation>.<n>`; the item itself then holds only
 * `\0syncscope-parts:<generation>:<count>`. The parts are written first and the item last, so a reader sees the old
 * value or the new one, never a mix; parts of the replaced generation are deleted afterwards.
 */
const MARKER = '\u0000syncscope-parts:'

interface Parts {
  generation: string
  count: number
}

function partsOf(head: string | undefined): Parts | null {
  if (!head?.startsWith(MARKER)) return null
  const [generation = '', count = ''] = head.slice(MARKER.length).split(':')
  return /^[0-9a-f]+$/.test(generation) && /^\d+$/.test(count) ? { generation, count: Number(count) } : null
}

/** Cuts into pieces of at most `max` UTF-16 units, never between the two halves of a surrogate pair. */
function cut(value: string, max: number): string[] {
  const pieces: string[] = []
  for (let at = 0; at < value.length;) {
    let end = Math.min(at + max, value.length)
    const last = value.charCodeAt(end - 1)
    if (end < value.length && last >= 0xd800 && last <= 0xdbff) end -= 1
    pieces.push(value.slice(at, end))
    at = end
  }
  return pieces
}

export function chunkedStore(store: SecretStore, maxChars: number): SecretStore {
  const partAccount = (account: string, parts: Parts, index: number) => `${account}#${parts.generation}.${index}`
  const deleteParts = async (account: string, parts: Parts | null) => {
    if (parts)
      for (let index = 1; index <= parts.count; index += 1) await store.delete(partAccount(account, parts, index))
  }
  return {
    kind: store.kind,
    description: store.description,
    async get(account) {
      const head = await store.get(account)
      const parts = partsOf(head)
      if (!parts) return head
      const pieces: string[] = []
      for (let index = 1; index <= parts.count; index += 1) {
        const piece = await store.get(partAccount(account, parts, index))
        if (piece === undefined)
          throw new KeychainError(
            'failed',
            `${account} is kept in ${parts.count} parts and part ${index} is missing; store it again (log in again)`
          )
        pieces.push(piece)
      }
      return pieces.join('')
    },
    async set(account, value) {
      const before = partsOf(await store.get(account))
      if (value.length <= maxChars && !value.startsWith(MARKER)) {
        await store.set(account, value)
      } else {
        const pieces = cut(value, maxChars)
        let generation: string
        do generation = randomBytes(4).toString('hex')
        while (generation === before?.generation)
        const parts = { generation, count: pieces.length }
        for (const [index, piece] of pieces.entries()) await store.set(partAccount(account, parts, index + 1), piece)
        await store.set(account, `${MARKER}${parts.generation}:${parts.count}`)
      }
      await deleteParts(account, before)
    },
    async delete(account) {
      const before = partsOf(await store.get(account))
      await store.delete(account)
      await deleteParts(account, before)
    }
  }
}
