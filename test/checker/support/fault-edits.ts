import { Transform } from 'node:stream'
import { constants, createGzip, gzipSync } from 'node:zlib'
import type { Answer, Asked, Fault } from './fault-proxy'

/** The small edits the fault modes are made of: which requests they touch, and what they do to answers. */

type Message = { headers: Record<string, unknown>; key?: string; value?: unknown }

export const param = (asked: Asked, name: string): string | null => asked.url.searchParams.get(name)

const hasSubsetParams = (asked: Asked) => [...asked.url.searchParams.keys()].some((key) => key.startsWith('subset__'))
export const isSubset = (asked: Asked): boolean => asked.method === 'POST' || hasSubsetParams(asked)
export const isSse = (asked: Asked): boolean => param(asked, 'live_sse') === 'true'
/** A live long-poll (not SSE). */
export const isLongPoll = (asked: Asked): boolean => param(asked, 'live') === 'true' && !isSse(asked)
export const isInitial = (asked: Asked): boolean => asked.method === 'GET' && param(asked, 'offset') === '-1'
/** A request that follows the log from an offset the server gave (not -1, not now, not live, not a subset). */
export const isCatchUp = (asked: Asked): boolean =>
  asked.method === 'GET' &&
  !['-1', 'now', null].includes(param(asked, 'offset')) &&
  param(asked, 'live') !== 'true' &&
  !hasSubsetParams(asked)

/** An answer of our own, as a service would give it. */
export function reply(status: number, body: unknown, headers: Record<string, string> = {}): Answer {
  return {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
    body: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body))
  }
}

/** The answer with these headers set, or removed (null). */
export function withHeaders(answer: Answer, changes: Record<string, string | null>): Answer {
  const headers = { ...answer.headers }
  for (const [name, value] of Object.entries(changes)) {
    if (value === null) delete headers[name]
    else headers[name] = value
  }
  return { ...answer, headers }
}

/** Changes the messages of a JSON array body. */
export function withMessages(answer: Answer, change: (messages: Message[]) => Message[]): Answer {
  const messages = JSON.parse(answer.body.toString()) as Message[]
  return { ...answer, body: Buffer.from(JSON.stringify(change(messages))) }
}

const control = (message: Message) => message.headers.control
export const isChange = (message: Message): boolean => typeof message.key === 'string'
export const withoutControl =
  (name: string) =>
  (messages: Message[]): Message[] =>
    messages.filter((message) => control(message) !== name)

/** A fault on answers of one status (and, when given, of requests that pass `which`). */
export function answers(
  status: number,
  change: (answer: Answer, asked: Asked) => Answer,
  which: (asked: Asked) => boolean = () => true
): Fault['answer'] {
  return (answer, asked) => (answer.status === status && which(asked) ? change(answer, asked) : undefined)
}

/** A fault on requests that pass `which`. */
export function requests(
  which: (asked: Asked) => boolean,
  change: (asked: Asked) => Asked | Answer | 'hold' | 'reset'
): Fault['request'] {
  return (asked) => (which(asked) ? change(asked) : undefined)
}

export function withParams(asked: Asked, changes: Record<string, string | null>): Asked {
  const url = new URL(asked.url)
  for (const [name, value] of Object.entries(changes)) {
    if (value === null) url.searchParams.delete(name)
    else url.searchParams.set(name, value)
  }
  return { ...asked, url }
}

/** A Transform that changes an event stream frame by frame (`\n\n`-terminated); `null` drops the frame. */
export function framewise(change: (frame: string) => string | null): () => Transform {
  return () => {
    let pending = ''
    return new Transform({
      transform(chunk: Buffer, _encoding, done) {
        pending += chunk.toString()
        const frames = pending.split('\n\n')
        pending = frames.pop() ?? ''
        done(
          null,
          frames
            .map((frame) => change(`${frame}\n\n`))
            .filter((frame) => frame !== null)
            .join('')
        )
      }
    })
  }
}

/** Holds what the stream sends and lets it through `ms` after the first held byte, all at once. */
export function heldFor(ms: number): () => Transform {
  return () => {
    let held: Buffer[] = []
    let timer: NodeJS.Timeout | null = null
    return new Transform({
      transform(chunk: Buffer, _encoding, done) {
        held.push(chunk)
        timer ??= setTimeout(() => {
          this.push(Buffer.concat(held))
          held = []
          timer = null
        }, ms)
        done()
      },
      flush(done) {
        if (timer) clearTimeout(timer)
        done(null, Buffer.concat(held))
      }
    })
  }
}

/** gzip, flushed after every piece (as nginx's gzip does on a flush): the frames arrive, compressed. */
export const gzipped = (): Transform => createGzip({ flush: constants.Z_SYNC_FLUSH })

/** `[`, `mib` MiB of spaces and `]` as gzip members of 16 MiB each: about 16 KB a member, inflating a thousandfold. */
export function gzipBomb(mib: number): Buffer {
  const member = gzipSync(Buffer.alloc(16 * 1024 * 1024, ' '), { level: 9 })
  return Buffer.concat([gzipSync('['), ...Array<Buffer>(Math.ceil(mib / 16)).fill(member), gzipSync(']')])
}
