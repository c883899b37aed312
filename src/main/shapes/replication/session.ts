import pg from 'pg'
import { DISPLAY_SETTINGS } from '../../../shared/protocol'
import { quoteIdent } from '../../sql'
import { formatLsn } from './lsn'
import { ReadTurns } from './read-turns'
import { decodeWalSenderMessage, standbyStatusUpdate, type WalSenderMessage } from './walsender'

/**
 * The same output settings as the snapshot connection, so live values are formatted like snapshot values (spaces
 * dropped: `options` separates its `-c` settings by spaces).
 */
const SESSION_SETTINGS = [
  ...DISPLAY_SETTINGS.map(([name, value]) => `${name}=${value.replaceAll(' ', '')}`),
  'client_encoding=UTF8'
]

/** Appends the session settings to the URL's `options`, after any the URL already has, so ours win. */
export function withSessionSettings(connectionString: string): string {
  let url: URL
  try {
    url = new URL(connectionString)
  } catch {
    throw new Error('the connection string must be a postgres:// URL')
  }
  const settings = SESSION_SETTINGS.map((setting) => `-c ${setting}`).join(' ')
  const existing = url.searchParams.get('options')
  url.searchParams.set('options', existing ? `${existing} ${settings}` : settings)
  return url.toString()
}

export interface SessionOptions {
  connectionString: string
  slotName: string
  publicationName: string
  startLsn: bigint
  onMessage(message: WalSenderMessage): void
  /** Called once when the session ends for any reason other than close(). */
  onEnd(error: Error): void
}

/** One walsender connection streaming pgoutput from the slot. */
export interface ReplicationSession {
  acknowledge(lsn: bigint): void
  pause(): void
  resume(): void
  close(): Promise<void>
}

/** The parts of pg's connection that replication needs and its type declarations leave out. */
interface CopyBothConnection {
  on(event: 'copyData', listener: (message: { chunk: Buffer }) => void): void
  once(event: 'replicationStart', listener: () => void): void
  sendCopyFromChunk(chunk: Buffer): void
  stream: { pause(): void; resume(): void }
}

export async function openReplicationSession(options: SessionOptions): Promise<ReplicationSession> {
  const config: pg.ClientConfig & { replication: 'database' } = {
    connectionString: withSessionSettings(options.connectionString),
    replication: 'database',
    application_name: 'syncscope-replication',
    keepAlive: true
  }
  const client = new pg.Client(config)
  let started = false
  let closing = false
  let ended = false
  const end = (error: Error): void => {
    if (ended) return
    ended = true
    if (started && !closing) options.onEnd(error)
  }
  client.on('error', end)
  client.on('end', () => end(new Error('the replication connection closed')))
  const connection = client.connection as unknown as CopyBothConnection
  const turns = new ReadTurns(connection.stream, READ_SLICE_MS)
  connection.on('copyData', ({ chunk }) => {
    if (closing || ended) return
    let message: WalSenderMessage
    try {
      message = decodeWalSenderMessage(chunk)
    } catch (error) {
      end(error as Error)
      return
    }
    options.onMessage(message)
    turns.messageHandled()
  })
  try {
    await client.connect()
    await new Promise<void>((resolve, reject) => {
      connection.once('replicationStart', () => {
        started = true
        resolve()
      })
      const settled = (error: Error): void => {
        reject(error)
        end(error)
      }
      client
        .query(startReplicationCommand(options))
        .then(() => settled(new Error('the replication stream ended')), settled)
    })
  } catch (error) {
    closing = true
    await client.end().catch(() => undefined)
    throw error
  }
  return {
    acknowledge(lsn) {
      if (!closing && !ended) connection.sendCopyFromChunk(standbyStatusUpdate(lsn))
    },
    pause: () => turns.hold(),
    resume: () => turns.release(),
    async close() {
      closing = true
      connection.stream.resume()
      await client.end().catch(() => undefined)
    }
  }
}

/** How long one event-loop turn may spend on walsender messages. */
const READ_SLICE_MS = 5

function startReplicationCommand(options: SessionOptions): string {
  const publications = quoteIdent(options.publicationName).replaceAll("'", "''")
  return `START_REPLICATION SLOT ${quoteIdent(options.slotName)} LOGICAL ${formatLsn(options.startLsn)} (proto_version '1', publication_names '${publications}')`
}
