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
import {
  type ConsumerEffect,
  type ConsumerEvent,
  type ConsumerState,
  generationOf,
  IDLE,
  isStopping,
  nextConsumerState,
  sessionOf
} from './consumer-state'
import { decodePgoutput } from './pgoutput'
import { PositionLedger } from './position-ledger'
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
  /** The connection's machine (consumer-state.ts): the consumer feeds it events and carries out its effects. */
  private state: ConsumerState = IDLE
  private backOffTimer: NodeJS.Timeout | null = null
  /** Numbers the sessions opened, so late callbacks of an ended one are recognised and ignored. */
  private generation = 0
  private assembler = new TransactionAssembler()
  private queue: CommittedTransaction[] = []
  /** Set while deliver() runs; cleared by deliver() itself in the same step that finds the queue empty. */
  private delivering = false
  private delivered: Promise<void> = Promise.resolve()
  private readonly positions: PositionLedger
  /** onSlotLost was called and the replacement slot is not created yet: a retry must not report the loss again. */
  private lossReported = false
  /** Failed onTransaction calls since the last success; with the state's failed connection attempts they set the backoff. */
  private applyFailures = 0
  private readonly statusTimer: NodeJS.Timeout
  private readonly publishing = new Map<string, Promise<void>>()
  /** Open control connections: pool.end() lets go of them before they have closed. */
  private readonly controlClients = new Set<pg.PoolClient>()

  constructor(private readonly options: ReplicationOptions) {
    this.positions = new PositionLedger(options.appliedLsn, options.awaitDurable ?? false)
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
    return this.positions.startLsn
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
    this.positions.durableThrough(commitLsn)
    this.acknowledge()
  }

  /** Feeds the machine an event and carries out its effects; what they leave to await (stop) is returned. */
  private dispatch(event: ConsumerEvent): Array<Promise<unknown>> {
    const { state, effects } = nextConsumerState(this.state, event)
    this.state = state
    return effects.map((effect) => this.act(effect))
  }

  private act(effect: ConsumerEffect): Promise<unknown> {
    switch (effect.kind) {
      case 'close-session':
        return effect.session.close()
      case 'back-off': {
        const exponent = Math.max(effect.attempt - 1, this.applyFailures - 1)
        const delay = Math.min(RECONNECT_FIRST_MS * 2 ** exponent, RECONNECT_CAP_MS)
        this.backOffTimer = setTimeout(() => void this.reconnect(), delay)
        break
      }
      case 'cancel-back-off':
        if (this.backOffTimer) clearTimeout(this.backOffTimer)
        this.backOffTimer = null
        break
      case 'await-opening':
        return effect.opening.catch(() => undefined)
      case 'log':
        this.log(effect.line)
        break
      case 'status':
        this.options.onStatus?.(
          effect.error === undefined ? { state: effect.state } : { state: effect.state, error: effect.error }
        )
    }
    return Promise.resolve()
  }

  async stop(): Promise<void> {
    const from = this.state
    if (from.phase === 'stopping') return from.done
    if (from.phase === 'stopped') return
    let finished = (): void => undefined
    const closing = this.dispatch({ kind: 'stop', done: new Promise<void>((resolve) => (finished = resolve)) })
    try {
      clearInterval(this.statusTimer)
      // the walsender connection being opened: none may outlive stop()
      await Promise.all(closing)
      await this.pool.end().catch(() => undefined)
      await Promise.all([...this.controlClients].map((client) => new Promise((resolve) => client.once('end', resolve))))
    } finally {
      this.dispatch({ kind: 'closed' })
      finished()
    }
  }

  /** The first connection. `hadSlot`: the caller holds state that came from the slot, so a missing slot means it was lost. */
  async connect(hadSlot: boolean): Promise<void> {
    this.dispatch({ kind: 'connect' })
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
    this.positions.slotLost()
  }

  private async openSession(): Promise<void> {
    if (isStopping(this.state)) throw new Error('replication stopped')
    const generation = ++this.generation
    this.assembler = new TransactionAssembler()
    const opening = openReplicationSession({
      connectionString: this.options.connectionString,
      slotName: this.options.slotName,
      publicationName: this.options.publicationName,
      startLsn: this.positions.startLsn,
      onMessage: (message) => {
        if (generationOf(this.state) === generation) this.receive(message)
      },
      onEnd: (error) => {
        if (generationOf(this.state) === generation) this.sessionFailed(error)
      }
    })
    this.dispatch({ kind: 'opening', generation, opening })
    const session = await opening.catch(async (error: unknown) => {
      if (isInsufficientPrivilege(error)) throw await replicationPrivilegeError(this.pool)
      throw error
    })
    this.positions.sessionOpened()
    const closing = this.dispatch({ kind: 'opened', generation, session })
    if (sessionOf(this.state) !== session) {
      await Promise.all(closing)
      throw new Error('the replication session was superseded before it started')
    }
    this.log(`streaming from slot "${this.options.slotName}"`)
  }

  private receive(message: WalSenderMessage): void {
    try {
      this.positions.received(message.walEnd)
      if (message.tag === 'keepalive') {
        this.reportPosition()
        this.positions.keepalive(message.walEnd, this.idle())
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
      if (this.positions.needsApplying(transaction.commitLsn)) {
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
        this.positions.applied(transaction.commitLsn)
      }
      this.queue.shift()
      this.positions.settled(transaction.commitLsn, endLsn)
      this.acknowledge()
      this.reportPosition()
      if (this.queue.length === QUEUE_LOW) sessionOf(this.state)?.resume()
    }
    this.delivering = false
    this.reportPosition()
  }

  /** Reports the position through which every received transaction has been handed over (all received, when idle). */
  private reportPosition(): void {
    const position = this.positions.toReport(this.idle())
    if (position !== null) this.options.onPosition?.(position)
  }

  /**
   * Sends the confirmed position when it moved since the last one sent, or `always` (the walsender asked, or the status
   * interval came). Not at every keepalive: while the confirmed position trails what it sent, the walsender pings
   * before each wait, and an answer wakes it to ping again (thousands of round trips a second). New WAL wakes it anyway,
   * so its position still comes with the next change.
   */
  private acknowledge(always = false): boolean {
    const session = sessionOf(this.state)
    if (!session) return false
    const position = this.positions.toAcknowledge(always)
    if (position === null) return false
    session.acknowledge(position)
    return true
  }

  /** Ends the current session; Postgres sends again from the last acknowledged position to the next one. */
  private sessionFailed(error: Error): void {
    // the failed session is closed meanwhile; a failure to close it changes nothing
    void Promise.all(this.dispatch({ kind: 'session-failed', error: error.message })).catch(() => undefined)
  }

  private async reconnect(): Promise<void> {
    this.backOffTimer = null
    this.dispatch({ kind: 'retry-due' })
    try {
      // a session that fails after it opened backs off by itself (sessionFailed), even before this returns
      await this.establish(true)
    } catch (error) {
      this.dispatch({ kind: 'connect-failed', error: (error as Error).message })
    }
  }

  private log(line: string): void {
    this.options.log?.(`replication: ${line}`)
  }
}
