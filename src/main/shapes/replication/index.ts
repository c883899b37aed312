import { ReplicationSetupError } from './catalog'
import { ReplicationConsumer } from './consumer'
import type { ReplicationOptions, ReplicationStream } from './types'

export type {
  RelationColumn,
  RelationInfo,
  ReplicatedChange,
  ReplicatedTransaction,
  ReplicationOptions,
  ReplicationStream,
  Row
} from './types'
export { formatLsn, parseLsn } from './lsn'
export { ReplicationSetupError } from './catalog'

const SLOT_NAME = /^[a-z0-9_]{1,63}$/

/**
 * Follows Postgres through the managed publication and pgoutput slot. Fails fast when Postgres cannot be followed
 * at all (wal_level, privileges, unreachable); afterwards every failure is retried with capped backoff.
 */
export async function startReplication(options: ReplicationOptions): Promise<ReplicationStream> {
  if (!SLOT_NAME.test(options.slotName)) {
    throw new ReplicationSetupError(
      `slot name "${options.slotName}" must be 1 to 63 lower-case letters, digits or underscores`
    )
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
