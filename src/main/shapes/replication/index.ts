import pg from 'pg'
import {
  checkWalLevel,
  createSlot,
  currentWalLsn,
  dropSlot,
  ensurePublication,
  inspectSlot,
  isInsufficientPrivilege,
  replicationPrivilegeError,
  ReplicationSetupError
} from './catalog'
import { decodePgoutput } from './pgoutput'
import { publishTable } from './publish-table'
import { openReplicationSession, type ReplicationSession } from './session'
import { type CommittedTransaction, TransactionAssembler } from './transactions'
import type { ReplicatedTransaction } from './types'
import type { WalSenderMessage } from './walsender'

export type { RelationColumn, RelationInfo, ReplicatedChange, ReplicatedTransaction, Row } from './types'
export { formatLsn, parseLsn } from './lsn'
export { ReplicationSetupError } from './catalog'

export interface ReplicationOptions {
  connectionString: string
  slotName: string
  publicationName: string
  /** Transactions whose commitLsn <= this were already applied by the caller (persisted): skip them on (re)start. */
  appliedLsn: bigint | null
  /** Called sequentially, one committed transaction at a time; its LSN is acknowledged to Postgres only after the promise resolves. */
  onTransaction(tx: ReplicatedTransaction): Promise<void>
  /** The slot disappeared (dropped, or the database was replaced): the caller invalidates every shape; the consumer recreates the slot and continues from the current WAL position. */
  onSlotLost(reason: string): Promise<void>
  onStatus?(status: { state: 'streaming' | 'reconnecting'; error?: string }): void
  log?(line: string): void
}

export interface ReplicationStream {
  /** Adds the table to the publication (if absent), sets REPLICA IDENTITY FULL (if not set), then waits until every transaction that was in progress before the table joined the publication has finished, so a snapshot taken afterwards plus the stream misses nothing. Clear error when not permitted. */
  ensureTable(schema: string, table: string): Promise<void>
  /** Commit LSN of the last transaction handed to onTransaction (or appliedLsn); 0 when neither exists, e.g. after the slot was lost. */
  readonly lastLsn: bigint
  /** pg_current_wal_lsn() as a bigint. */
  currentWalLsn(): Promise<bigint>
  stop(): Promise<void>
}

const SLOT_NAME = /^[a-z0-9_]{1,63}$/
const RECONNECT_FIRST_MS = 100
const RECONNECT_CAP_MS = 5_000
/** Status updates also keep the walsender from timing out (wal_sender_timeout, 60 s by default) while a transaction is applied. */
const STATUS_INTERVAL_MS = 10_000
/** Completed transactions waiting for onTransaction before the socket is paused, and the level at which it resumes. */
const QUEUE_HIGH = 256
const QUEUE_LOW = 16

/**
 * Follows Postgres through the managed publication and pgoutput slot. Fails fast when Postgres cannot be followed
 * at all (wal_level, privileges, unreachable); afterwards every failure is retried with capped backoff.
 */
export async function startReplication(options: ReplicationOptions): Promise<ReplicationStream> {
  if (!SLOT_NAME.test(options.slotName)) {
    throw new ReplicationSetupError(`slot name "${options.slotName}" must be 1 to 63 lower-case letters, digits or underscores`)
  }
  const consumer = new ReplicationConsumer(options)
  try {
    await consumer.connect(options.appliedLsn !== null)
  } catch (error) {
    await consumer.stop()
    throw error
  }
  return consumer
}

class ReplicationConsumer implements ReplicationStream {
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
  private stopped = false
  /** Failed connection attempts, and failed onTransaction calls, since the last success of each; they set the backoff. */
  private attempts = 0
  private applyFailures = 0
  private reconnectTimer: NodeJS.Timeout | null = null
  private readonly statusTimer: NodeJS.Timeout
  private readonly publishing = new Map<string, Promise<void>>()

  constructor(private readonly options: ReplicationOptions) {
    this.skipThrough = options.appliedLsn
    this.pool = new pg.Pool({ connectionString: options.connectionString, max: 2, idleTimeoutMillis: 10_000, application_name: 'syncscope-replication-control' })
    this.pool.on('error', (error) => this.log(`control connection: ${error.message}`))
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
    const publishing = publishTable(this.pool, this.options.publicationName, schema, table, () => this.stopped).finally(() =>
      this.publishing.delete(key)
    )
    this.publishing.set(key, publishing)
    return publishing
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearInterval(this.statusTimer)
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer)
    this.generation += 1
    const session = this.session
    this.session = null
    await session?.close()
    await this.pool.end().catch(() => undefined)
  }

  /** `hadSlot`: the caller holds state that came from the slot, so a missing slot means it was lost. */
  async connect(hadSlot: boolean): Promise<void> {
    await checkWalLevel(this.pool)
    await ensurePublication(this.pool, this.options.publicationName)
    const slot = await inspectSlot(this.pool, this.options.slotName)
    if (slot.state !== 'present') {
      const reason = slot.state === 'unusable' ? slot.reason : `replication slot "${this.options.slotName}" does not exist`
      if (hadSlot) await this.slotLost(reason)
      if (slot.state === 'unusable') await dropSlot(this.pool, this.options.slotName)
      await createSlot(this.pool, this.options.slotName)
    }
    await this.openSession()
  }

  private async slotLost(reason: string): Promise<void> {
    this.log(`${reason}; recreating it`)
    await this.delivered
    await this.options.onSlotLost(reason)
    // Positions of the lost slot mean nothing to the new one (the database may even be another cluster).
    this.skipThrough = null
    this.confirmedLsn = 0n
  }

  private async openSession(): Promise<void> {
    const generation = ++this.generation
    this.assembler = new TransactionAssembler()
    const session = await openReplicationSession({
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
    }).catch(async (error: unknown) => {
      if (isInsufficientPrivilege(error)) throw await replicationPrivilegeError(this.pool)
      throw error
    })
    if (generation !== this.generation) {
      await session.close()
      return
    }
    this.session = session
    this.attempts = 0
    this.log(`streaming from slot "${this.options.slotName}"`)
    this.options.onStatus?.({ state: 'streaming' })
  }

  private receive(message: WalSenderMessage): void {
    try {
      if (message.tag === 'keepalive') {
        if (this.idle() && message.walEnd > this.confirmedLsn) {
          this.confirmedLsn = message.walEnd
          this.acknowledge()
        } else if (message.replyRequested) {
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
      if (endLsn > this.confirmedLsn) this.confirmedLsn = endLsn
      this.acknowledge()
      if (this.queue.length === QUEUE_LOW) this.session?.resume()
    }
    this.delivering = false
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
    if (this.stopped || this.reconnectTimer) return
    const delay = Math.min(RECONNECT_FIRST_MS * 2 ** Math.max(this.attempts, this.applyFailures - 1), RECONNECT_CAP_MS)
    this.attempts += 1
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null
      this.connect(true).catch((error: Error) => {
        if (this.stopped) return
        this.log(`reconnecting failed: ${error.message}`)
        this.options.onStatus?.({ state: 'reconnecting', error: error.message })
        this.scheduleReconnect()
      })
    }, delay)
  }

  private log(line: string): void {
    this.options.log?.(`replication: ${line}`)
  }
}
