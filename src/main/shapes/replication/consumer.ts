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
import { decodePgoutput } from './pgoutput'
import { publishTable } from './publish-table'
import { openReplicationSession, type ReplicationSession } from './session'
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
  private session: ReplicationSession | null = null
  /** Increases with every session, so late callbacks of an ended one are recognised and ignored. */
  private generation = 0
  private assembler = new TransactionAssembler()
  private queue: CommittedTransaction[] = []
  /** Set while deliver() runs; cleared by deliver() itself in the same step that finds the queue empty. */
  private delivering = false
  private delivered: Promise<void> = Promise.resolve()
  private skipThrough: bigint | null
  private confirmedLsn = 0n
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
  private stopped = false
  /** Failed connection attempts, and failed onTransaction calls, since the last success of each; they set the backoff. */
  private attempts = 0
  private applyFailures = 0
  /** A reconnect is scheduled or running. */
  private reconnecting = false
  private reconnectTimer: NodeJS.Timeout | null = null
  /** The walsender connection being opened, which stop() waits for so that none outlives it. */
  private opening: Promise<unknown> | null = null
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
    this.statusTimer = setInterval(() => this.acknowledge(), STATUS_INTERVAL_MS)
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
    const publishing = publishTable(this.pool, this.options.publicationName, schema, table, () => this.stopped).finally(
      () => this.publishing.delete(key)
    )
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

  async stop(): Promise<void> {
    this.stopped = true
    clearInterval(this.statusTimer)
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer)
    this.generation += 1
    const session = this.session
    this.session = null
    await session?.close()
    await this.opening?.catch(() => undefined)
    await this.pool.end().catch(() => undefined)
    await Promise.all([...this.controlClients].map((client) => new Promise((resolve) => client.once('end', resolve))))
  }

  /** `hadSlot`: the caller holds state that came from the slot, so a missing slot means it was lost. */
  async connect(hadSlot: boolean): Promise<void> {
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
    if (this.stopped) throw new Error('replication stopped')
    const generation = ++this.generation
    this.assembler = new TransactionAssembler()
    const opening = openReplicationSession({
      connectionString: this.options.connectionString,
      slotName: this.options.slotName,
      publicationName: this.options.publicationName,
      startLsn: this.skipThrough ?? 0n,
      onMessage: (message) => {
        if (generation === this.generation) this.receive(message)
      },
      onEnd: (error) => {
        if (generation === this.generation) this.sessionFailed(error)
      }
    })
    this.opening = opening
    const session = await opening.catch(async (error: unknown) => {
      if (isInsufficientPrivilege(error)) throw await replicationPrivilegeError(this.pool)
      throw error
    })
    if (generation !== this.generation) {
      await session.close()
      throw new Error('the replication session was superseded before it started')
    }
    this.session = session
    this.attempts = 0
    this.log(`streaming from slot "${this.options.slotName}"`)
    this.options.onStatus?.({ state: 'streaming' })
  }

  private receive(message: WalSenderMessage): void {
    try {
      if (message.walEnd > this.receivedLsn) this.receivedLsn = message.walEnd
      if (message.tag === 'keepalive') {
        this.reportPosition()
        if (this.idle() && this.undurable.length === 0 && message.walEnd > this.confirmedLsn) {
          this.confirmedLsn = message.walEnd
          this.acknowledge()
        } else {
          // answered even unasked: the walsender pings again (with its position) only after a reply
          this.acknowledge()
        }
        return
      }
      const committed = this.assembler.push(decodePgoutput(message.payload))
      if (!committed) return
      this.queue.push(committed)
      if (this.queue.length >= QUEUE_HIGH) this.session?.pause()
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
    for (let next = this.queue[0]; next && !this.stopped; next = this.queue[0]) {
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
        if (this.stopped) break
        this.skipThrough = transaction.commitLsn
      }
      this.queue.shift()
      this.settled(transaction.commitLsn, endLsn)
      this.acknowledge()
      if (endLsn > this.handedLsn) this.handedLsn = endLsn
      this.reportPosition()
      if (this.queue.length === QUEUE_LOW) this.session?.resume()
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

  private acknowledge(): void {
    this.session?.acknowledge(this.confirmedLsn)
  }

  /** Ends the current session; Postgres sends again from the last acknowledged position to the next one. */
  private sessionFailed(error: Error): void {
    if (this.stopped) return
    this.generation += 1
    const session = this.session
    this.session = null
    void session?.close()
    this.log(`replication interrupted: ${error.message}`)
    this.options.onStatus?.({ state: 'reconnecting', error: error.message })
    this.scheduleReconnect()
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.reconnecting) return
    this.reconnecting = true
    const delay = Math.min(RECONNECT_FIRST_MS * 2 ** Math.max(this.attempts, this.applyFailures - 1), RECONNECT_CAP_MS)
    this.attempts += 1
    this.reconnectTimer = setTimeout(() => void this.reconnect(), delay)
  }

  private async reconnect(): Promise<void> {
    this.reconnectTimer = null
    try {
      await this.connect(true)
      this.reconnecting = false
      // the new session may have failed already, before connect() returned (its first transaction could not be applied)
      if (!this.session) this.scheduleReconnect()
    } catch (error) {
      this.reconnecting = false
      if (this.stopped) return
      this.log(`reconnecting failed: ${(error as Error).message}`)
      this.options.onStatus?.({ state: 'reconnecting', error: (error as Error).message })
      this.scheduleReconnect()
    }
  }

  private log(line: string): void {
    this.options.log?.(`replication: ${line}`)
  }
}
