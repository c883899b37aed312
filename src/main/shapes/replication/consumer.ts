import pg from 'pg'
import {
  checkWalLevel,
  createSlot,
  currentWalLsn,
  dropSlot,
  ensurePublication,
  inspectSlot,
  isInsufficientPrivilege,
  replicationPrivilegeError
} from './catalog'
import { type ConsumerState, generationOf, IDLE, isStopping, sessionOf, transition } from './consumer-state'
import { decodePgoutput } from './pgoutput'
import { publishTable } from './publish-table'
import { openReplicationSession } from './session'
import { type CommittedTransaction, TransactionAssembler } from './transactions'
import type { ReplicationOptions, ReplicationStream } from './types'
import type { WalSenderMessage } from './walsender'

const RECONNECT_FIRST_MS = 100
const RECONNECT_CAP_MS = 5_000
/** Status updates also keep the walsender from timing out (wal_sender_timeout, 60 s by default) while a transaction is applied. */
const STATUS_INTERVAL_MS = 10_000
/** Completed transactions waiting for onTransaction before the socket is paused, and the level at which it resumes. */
const QUEUE_HIGH = 256
const QUEUE_LOW = 16

/**
 * One consumer of the slot: opens walsender sessions, hands over transactions one at a time, acknowledges what was
 * applied, and reconnects with capped backoff.
 */
export class ReplicationConsumer implements ReplicationStream {
  private readonly pool: pg.Pool
  /** The connection's lifecycle; every change goes through the transition table (consumer-state.ts). */
  private state: ConsumerState = IDLE
  /** Numbers the sessions opened, so late callbacks of an ended one are recognised and ignored. */
  private generation = 0
  private assembler = new TransactionAssembler()
  private queue: CommittedTransaction[] = []
  /** Set while deliver() runs; cleared by deliver() itself in the same step that finds the queue empty. */
  private delivering = false
  private delivered: Promise<void> = Promise.resolve()
  private skipThrough: bigint | null
  private confirmedLsn = 0n
  /** The position last sent to the current session's walsender (-1 before the first). */
  private acknowledgedLsn = -1n
  /** Commit LSN through which the caller reported its work durable (with `awaitDurable`). */
  private durableLsn: bigint
  /** Delivered transactions that are not durable yet: their end LSNs are acknowledged once they are. */
  private undurable: Array<{ commitLsn: bigint; endLsn: bigint }> = []
  /** The highest walEnd received, and the position last reported to onPosition. */
  private receivedLsn = 0n
  private reportedLsn = 0n
  /** The end LSN of the last transaction handed over (or skipped as applied before). */
  private handedLsn = 0n
  /** onSlotLost was called and the replacement slot is not created yet: a retry must not report the loss again. */
  private lossReported = false
  /** Failed onTransaction calls since the last success; with the state's failed connection attempts they set the backoff. */
  private applyFailures = 0
  private readonly statusTimer: NodeJS.Timeout
  private readonly publishing = new Map<string, Promise<void>>()
  /** Open control connections: pool.end() lets go of them before they have closed. */
  private readonly controlClients = new Set<pg.PoolClient>()

  constructor(private readonly options: ReplicationOptions) {
    this.skipThrough = options.appliedLsn
    this.durableLsn = options.appliedLsn ?? 0n
    this.pool = new pg.Pool({
      connectionString: options.connectionString,
      max: 2,
      idleTimeoutMillis: 10_000,
      application_name: 'syncscope-replication-control'
    })
    const logError = (error: Error): void => this.log(`control connection: ${error.message}`)
    this.pool.on('error', logError)
    this.pool.on('connect', (client) => {
      this.controlClients.add(client)
      client.once('end', () => this.controlClients.delete(client))
      // The client keeps this listener after the pool lets go of it: its connection may still fail while closing.
      client.on('error', logError)
    })
    this.statusTimer = setInterval(() => this.acknowledge(true), STATUS_INTERVAL_MS)
  }

  get lastLsn(): bigint {
    return this.skipThrough ?? 0n
  }

  currentWalLsn(): Promise<bigint> {
    return currentWalLsn(this.pool)
  }

  ensureTable(schema: string, table: string): Promise<void> {
    const key = JSON.stringify([schema, table])
    const pending = this.publishing.get(key)
    if (pending) return pending
    const publishing = publishTable(
      this.pool,
      this.options.publicationName,
      schema,
      table,
      () => isStopping(this.state),
      (line) => this.log(line)
    ).finally(() => this.publishing.delete(key))
    this.publishing.set(key, publishing)
    return publishing
  }

  durableThrough(commitLsn: bigint): void {
    if (commitLsn > this.durableLsn) this.durableLsn = commitLsn
    let first = this.undurable[0]
    for (; first && first.commitLsn <= this.durableLsn; first = this.undurable[0]) {
      this.undurable.shift()
      this.confirm(first.endLsn)
    }
    this.acknowledge()
  }

  /** A transaction was applied (or skipped as applied before): acknowledgeable now, or once it is durable. */
  private settled(commitLsn: bigint, endLsn: bigint): void {
    if (!this.options.awaitDurable || commitLsn <= this.durableLsn) this.confirm(endLsn)
    else this.undurable.push({ commitLsn, endLsn })
  }

  private confirm(endLsn: bigint): void {
    if (endLsn > this.confirmedLsn) this.confirmedLsn = endLsn
  }

  private moveTo(next: ConsumerState): void {
    this.state = transition(this.state, next)
  }

  async stop(): Promise<void> {
    const from = this.state
    if (from.phase === 'stopping') return from.done
    if (from.phase === 'stopped') return
    let finished = (): void => undefined
    this.moveTo({ phase: 'stopping', done: new Promise<void>((resolve) => (finished = resolve)) })
    try {
      clearInterval(this.statusTimer)
      if (from.phase === 'reconnecting') clearTimeout(from.timer)
      await sessionOf(from)?.close()
      // the walsender connection being opened: none may outlive stop()
      if (from.phase === 'connecting') await from.opening?.catch(() => undefined)
      await this.pool.end().catch(() => undefined)
      await Promise.all([...this.controlClients].map((client) => new Promise((resolve) => client.once('end', resolve))))
    } finally {
      this.moveTo({ phase: 'stopped' })
      finished()
    }
  }

  /** The first connection. `hadSlot`: the caller holds state that came from the slot, so a missing slot means it was lost. */
  async connect(hadSlot: boolean): Promise<void> {
    this.moveTo({ phase: 'connecting', attempt: 0, generation: null, opening: null })
    await this.establish(hadSlot)
  }

  private async establish(hadSlot: boolean): Promise<void> {
    await checkWalLevel(this.pool)
    await ensurePublication(this.pool, this.options.publicationName)
    const slot = await inspectSlot(this.pool, this.options.slotName)
    if (slot.state !== 'present') {
      const reason =
        slot.state === 'unusable' ? slot.reason : `replication slot "${this.options.slotName}" does not exist`
      if (hadSlot && !this.lossReported) await this.slotLost(reason)
      if (slot.state === 'unusable') await dropSlot(this.pool, this.options.slotName)
      await createSlot(this.pool, this.options.slotName)
      this.lossReported = false
    }
    await this.openSession()
  }

  private async slotLost(reason: string): Promise<void> {
    this.log(`${reason}; recreating it`)
    await this.delivered
    await this.options.onSlotLost(reason)
    this.lossReported = true
    // Positions of the lost slot mean nothing to the new one (the database may even be another cluster).
    this.skipThrough = null
    this.confirmedLsn = 0n
    this.durableLsn = 0n
    this.undurable = []
    this.receivedLsn = 0n
    this.reportedLsn = 0n
    this.handedLsn = 0n
  }

  private async openSession(): Promise<void> {
    if (isStopping(this.state)) throw new Error('replication stopped')
    const attempt = this.state.phase === 'connecting' ? this.state.attempt : 0
    const generation = ++this.generation
    this.assembler = new TransactionAssembler()
    const opening = openReplicationSession({
      connectionString: this.options.connectionString,
      slotName: this.options.slotName,
      publicationName: this.options.publicationName,
      startLsn: this.skipThrough ?? 0n,
      onMessage: (message) => {
        if (generationOf(this.state) === generation) this.receive(message)
      },
      onEnd: (error) => {
        if (generationOf(this.state) === generation) this.sessionFailed(error)
      }
    })
    this.moveTo({ phase: 'connecting', attempt, generation, opening })
    const session = await opening.catch(async (error: unknown) => {
      if (isInsufficientPrivilege(error)) throw await replicationPrivilegeError(this.pool)
      throw error
    })
    if (generationOf(this.state) !== generation) {
      await session.close()
      throw new Error('the replication session was superseded before it started')
    }
    this.acknowledgedLsn = -1n
    this.moveTo({ phase: 'streaming', generation, session })
    this.log(`streaming from slot "${this.options.slotName}"`)
    this.options.onStatus?.({ state: 'streaming' })
  }

  private receive(message: WalSenderMessage): void {
    try {
      if (message.walEnd > this.receivedLsn) this.receivedLsn = message.walEnd
      if (message.tag === 'keepalive') {
        this.reportPosition()
        if (this.idle() && this.undurable.length === 0 && message.walEnd > this.confirmedLsn)
          this.confirmedLsn = message.walEnd
        const answered = this.acknowledge(message.replyRequested)
        this.options.onKeepalive?.({ walEnd: message.walEnd, answered })
        return
      }
      const committed = this.assembler.push(decodePgoutput(message.payload))
      if (!committed) return
      this.queue.push(committed)
      if (this.queue.length >= QUEUE_HIGH) sessionOf(this.state)?.pause()
      if (!this.delivering) {
        this.delivering = true
        this.delivered = this.deliver()
      }
    } catch (error) {
      this.sessionFailed(error as Error)
    }
  }

  /** Nothing received is waiting to be applied, so everything the walsender has sent is applied. */
  private idle(): boolean {
    return !this.assembler.inTransaction && this.queue.length === 0 && !this.delivering
  }

  private async deliver(): Promise<void> {
    for (let next = this.queue[0]; next && !isStopping(this.state); next = this.queue[0]) {
      const { transaction, endLsn } = next
      if (this.skipThrough === null || transaction.commitLsn > this.skipThrough) {
        try {
          await this.options.onTransaction(transaction)
          this.applyFailures = 0
        } catch (error) {
          this.applyFailures += 1
          this.queue = []
          this.delivering = false
          this.sessionFailed(new Error(`applying transaction ${transaction.xid} failed: ${(error as Error).message}`))
          return
        }
        if (isStopping(this.state)) break
        this.skipThrough = transaction.commitLsn
      }
      this.queue.shift()
      this.settled(transaction.commitLsn, endLsn)
      this.acknowledge()
      if (endLsn > this.handedLsn) this.handedLsn = endLsn
      this.reportPosition()
      if (this.queue.length === QUEUE_LOW) sessionOf(this.state)?.resume()
    }
    this.delivering = false
    this.reportPosition()
  }

  /** Reports the position through which every received transaction has been handed over (all received, when idle). */
  private reportPosition(): void {
    const position = this.idle() ? this.receivedLsn : this.handedLsn
    if (position <= this.reportedLsn) return
    this.reportedLsn = position
    this.options.onPosition?.(position)
  }

  /**
   * Sends the confirmed position when it moved since the last one sent, or `always` (the walsender asked, or the status
   * interval came). Not at every keepalive: while the confirmed position trails what it sent, the walsender pings
   * before each wait, and an answer wakes it to ping again (thousands of round trips a second). New WAL wakes it anyway,
   * so its position still comes with the next change.
   */
  private acknowledge(always = false): boolean {
    const session = sessionOf(this.state)
    if (!session || (!always && this.confirmedLsn <= this.acknowledgedLsn)) return false
    session.acknowledge(this.confirmedLsn)
    this.acknowledgedLsn = this.confirmedLsn
    return true
  }

  /** Ends the current session; Postgres sends again from the last acknowledged position to the next one. */
  private sessionFailed(error: Error): void {
    const state = this.state
    if (isStopping(state)) return
    if (state.phase === 'connecting') {
      // reported while connecting (the previous session's last transaction could not be applied): a session being
      // opened is superseded (closed, and the connection backs off); one not opened yet is not affected
      this.moveTo({ ...state, generation: null })
    } else if (state.phase === 'reconnecting') {
      this.moveTo({ ...state, error: error.message })
    } else {
      this.backOff(1, error.message)
      void sessionOf(state)?.close()
    }
    this.log(`replication interrupted: ${error.message}`)
    this.options.onStatus?.({ state: 'reconnecting', error: error.message })
  }

  /** Waits before the next connection; `attempt`: failed connections since the last session opened, this one included. */
  private backOff(attempt: number, error: string): void {
    const delay = Math.min(RECONNECT_FIRST_MS * 2 ** Math.max(attempt - 1, this.applyFailures - 1), RECONNECT_CAP_MS)
    this.moveTo({ phase: 'reconnecting', attempt, error, timer: setTimeout(() => void this.reconnect(), delay) })
  }

  private async reconnect(): Promise<void> {
    const attempt = this.state.phase === 'reconnecting' ? this.state.attempt : 0
    this.moveTo({ phase: 'connecting', attempt, generation: null, opening: null })
    try {
      // a session that fails after it opened backs off by itself (sessionFailed), even before this returns
      await this.establish(true)
    } catch (error) {
      if (isStopping(this.state)) return
      this.log(`reconnecting failed: ${(error as Error).message}`)
      this.options.onStatus?.({ state: 'reconnecting', error: (error as Error).message })
      this.backOff(attempt + 1, (error as Error).message)
    }
  }

  private log(line: string): void {
    this.options.log?.(`replication: ${line}`)
  }
}
