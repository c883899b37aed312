import type pg from 'pg'
import { type Message, get, messages } from './shape-http'

type Values = Record<string, string | null>

interface Held {
  value: Values
  tags: string[]
  conditions: boolean[]
}

/**
 * A client that materialises a subquery shape by the reference's rules (notes §2.4, consumer/materializer.ex): a
 * row is present while some tag has every non-empty slot's position true; move-in / move-out flip the conditions of
 * the rows whose slot matches a pattern, and rows no tag holds any more are dropped. Anomalies (an insert of a held
 * key, a change of an absent one) are recorded, not hidden.
 */
export class TagClient {
  readonly rows = new Map<string, Held>()
  readonly anomalies: string[] = []
  readonly seen: Message[] = []
  handle = ''
  offset = '-1'

  constructor(
    private readonly base: string,
    private readonly shape: Record<string, string>,
    /** Start again from -1 on a 409, as a client does; otherwise a 409 throws. */
    private readonly restartOn409 = false,
    private readonly brand = 'service'
  ) {}

  private static included(held: Held): boolean {
    if (held.tags.length === 0 || held.conditions.length === 0) return true
    return held.tags.some((tag) => tag.split('/').every((slot, pos) => slot === '' || held.conditions[pos] === true))
  }

  apply(list: readonly Message[]): void {
    for (const message of list) {
      this.seen.push(message)
      const { headers } = message
      if (headers.control === 'must-refetch') {
        this.rows.clear()
        continue
      }
      if (headers.event === 'move-in' || headers.event === 'move-out') {
        const value = headers.event === 'move-in'
        for (const { pos, value: hash } of headers.patterns as Array<{ pos: number; value: string }>) {
          for (const [key, held] of this.rows) {
            if (!held.tags.some((tag) => tag.split('/')[pos] === hash)) continue
            held.conditions[pos] = value
            if (!TagClient.included(held)) this.rows.delete(key)
          }
        }
        continue
      }
      const key = message.key
      if (!key) continue
      const operation = headers.operation
      const tags = (headers.tags as string[] | undefined) ?? null
      const conditions = (headers.active_conditions as boolean[] | undefined) ?? null
      const held = this.rows.get(key)
      if (operation === 'insert') {
        if (held) this.anomalies.push(`insert of held ${key}${headers.is_move_in ? ' (move-in)' : ''}`)
        this.rows.set(key, { value: { ...message.value }, tags: tags ?? [], conditions: [...(conditions ?? [])] })
      } else if (operation === 'update') {
        if (!held) {
          this.anomalies.push(`update of absent ${key}`)
          continue
        }
        this.rows.set(key, {
          value: { ...held.value, ...message.value },
          tags: tags ?? held.tags,
          conditions: conditions ? [...conditions] : held.conditions
        })
      } else if (operation === 'delete') {
        if (!held) this.anomalies.push(`delete of absent ${key}`)
        this.rows.delete(key)
      }
    }
  }

  /** Requests until up-to-date (live requests after the first sync); returns the messages of this call. */
  async sync(): Promise<Message[]> {
    const got: Message[] = []
    for (;;) {
      const params: Record<string, string> = { ...this.shape, offset: this.offset }
      if (this.handle) params.handle = this.handle
      if (this.offset !== '-1' && got.length === 0) params.live = 'true'
      const response = await get(this.base, params, {}, this.brand)
      if (response.status === 409 && this.restartOn409) {
        this.rows.clear()
        this.handle = ''
        this.offset = '-1'
        continue
      }
      if (response.status === 409) throw new Error(`409 must-refetch: ${response.text}`)
      if (response.status !== 200) throw new Error(`unexpected ${response.status}: ${response.text}`)
      this.handle = response.header('@handle') ?? this.handle
      this.offset = response.header('@offset') ?? this.offset
      const list = messages(response)
      this.apply(list)
      got.push(...list)
      if (list.some((message) => message.headers.control === 'up-to-date')) return got
    }
  }

  /** Syncs until the materialised ids equal `expected` (a change may take a few requests to arrive). */
  async until(expected: () => Promise<string[]>, tries = 40): Promise<void> {
    let want = await expected()
    for (let attempt = 0; attempt < tries; attempt++) {
      if (JSON.stringify(this.ids()) === JSON.stringify(want)) return
      await this.sync()
      want = await expected()
    }
  }

  ids(): string[] {
    return [...this.rows.values()].map((held) => String(held.value.id)).sort((a, b) => Number(a) - Number(b))
  }
}

export const idsOf = async (pool: pg.Pool, sql: string, params: unknown[] = []): Promise<string[]> =>
  (await pool.query<{ id: string }>(sql, params)).rows
    .map((row) => String(row.id))
    .sort((a, b) => Number(a) - Number(b))
