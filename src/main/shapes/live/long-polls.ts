import { type LogOffset, formatOffset, readPosition } from '../storage/offset'
import type { LogSlice } from '../storage/shape-log'
import type { Cancellation } from './cancellation'
import { PARALLEL_FROM, parallelWrites } from './parallel-writes'
import type { ShapeNews } from './shape-news'

/** A live long-poll held until its shape has entries after its offset, its own timeout, or its client goes away. */
export interface LongPoll {
  /** Long-polls with the same key get the same answer to the same change. */
  key: string
  timeoutMs: number
  cancellation: Cancellation
  /** Answers it on its own: timed out, cancelled, or its group could not share an answer. */
  answerAlone(): Promise<void>
}

/**
 * Answers every long-poll of a woken group with the entries after their offset, built once and written to all of
 * them in one pass; false when they cannot share an answer (each is then answered alone).
 */
export type AnswerTogether<P extends LongPoll> = (polls: readonly P[], slice: LogSlice) => boolean

/** How often a group with no change re-registers with its shape (members time out on their own). */
const GROUP_RECHECK_MS = 60_000

interface Member {
  poll: LongPoll
  resolve: (answered: Promise<void>) => void
  /** Stops the member's own timeout and cancel listener. */
  release: () => void
}

/**
 * Identical live long-polls (same shape, offset and key) wait together. One wake-up of the shape checks the log once,
 * builds the answer once and writes it to every member in one pass, with no promise hop or per-request work between
 * them: how one change reaches a thousand waiting clients quickly.
 */
class LongPollGroup {
  private readonly members = new Set<Member>()

  constructor(
    private readonly live: ShapeNews,
    private readonly from: LogOffset,
    private readonly together: AnswerTogether<LongPoll>,
    private readonly close: () => void
  ) {
    this.listen()
  }

  /** Waits with the group until the shape grows; on its own timeout or cancel it leaves and is answered alone. */
  join(poll: LongPoll): Promise<void> {
    return new Promise((resolve) => {
      const leave = (): void => {
        if (!this.members.delete(member)) return
        member.release()
        resolve(poll.answerAlone())
      }
      const timer = setTimeout(leave, poll.timeoutMs)
      const stopListening = poll.cancellation.onCancel(leave)
      const member: Member = { poll, resolve, release: () => (clearTimeout(timer), stopListening()) }
      this.members.add(member)
      // the second writing thread takes tens of milliseconds to start: not while a change waits for it
      if (this.members.size === PARALLEL_FROM) parallelWrites.start()
    })
  }

  get size(): number {
    return this.members.size
  }

  private listen(): void {
    this.live.onChange(() => this.wake(), GROUP_RECHECK_MS)
  }

  private wake(): void {
    const { shape } = this.live
    if (this.members.size === 0) return this.close()
    if (!this.live.hasNews(this.from)) return this.listen()
    this.close()
    const members = [...this.members]
    this.members.clear()
    const slice = shape.invalidated ? undefined : shape.tailAfter(this.from)
    // every member is written before any timer is cleared or promise settled: the last one out is what counts
    const shared =
      !!slice &&
      this.together(
        members.map((member) => member.poll),
        slice
      )
    for (const member of members) {
      member.release()
      member.resolve(shared ? Promise.resolve() : member.poll.answerAlone())
    }
  }
}

/** A shape's held live long-polls, in groups by offset and key. */
export class LongPolls {
  private readonly groups = new Map<string, LongPollGroup>()

  constructor(private readonly live: ShapeNews) {}

  /** Live long-polls held now. */
  get held(): number {
    let held = 0
    for (const group of this.groups.values()) held += group.size
    return held
  }

  /** Holds `poll` until the shape has entries after `from` or its timeout, in its group; answered alone at once when it need not wait. */
  hold<P extends LongPoll>(poll: P, from: LogOffset, together: AnswerTogether<P>): Promise<void> {
    if (this.live.hasNews(readPosition(from)) || poll.cancellation.cancelled) return poll.answerAlone()
    const key = `${formatOffset(from)}\u0000${poll.key}`
    let group = this.groups.get(key)
    if (!group) {
      // a group's members share the key, so they are all of the type of the poll that made it
      const answerTogether = (polls: readonly LongPoll[], slice: LogSlice) => together(polls as readonly P[], slice)
      const created = new LongPollGroup(this.live, readPosition(from), answerTogether, () => {
        if (this.groups.get(key) === created) this.groups.delete(key)
      })
      this.groups.set(key, created)
      group = created
    }
    return group.join(poll)
  }
}
