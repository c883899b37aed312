import { CACHING_FAULTS } from './faults-caching'
import { LIVE_FAULTS } from './faults-live'
import { SSE_FAULTS } from './faults-sse'
import { SYNC_FAULTS } from './faults-sync'
import type { FaultCase } from './fault-case'

export type { FaultCase } from './fault-case'

/** The table of fault modes: one per way of breaking a rule of the checker's catalogue (at least one per finding id). */
export const FAULTS: readonly FaultCase[] = [...SYNC_FAULTS, ...CACHING_FAULTS, ...LIVE_FAULTS, ...SSE_FAULTS]
