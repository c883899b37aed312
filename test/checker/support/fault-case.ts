import type { FindingId } from '../../../src/main/checker/rules'
import type { Fault } from './fault-proxy'
import { gzipBomb } from './fault-edits'

/** One protocol rule broken in front of a sound server, and what `syncscope check` must say about it. */
export interface FaultCase {
  /** The mode's name (its path segment at the proxy). */
  mode: string
  /** The fault in words. */
  what: string
  fault: Fault
  /** The checks run against it. */
  checks: string[]
  /** The finding that names it… */
  finding: FindingId
  /** …with the cause in its message, and its fix (null: the catalogue gives none). */
  cause: RegExp
  fix: RegExp | null
  /** Other findings the same fault rightly causes: the run's findings are exactly `finding` and these. */
  also?: FindingId[]
  /** Needs --write-sql (the live checks commit rows). */
  writes?: boolean
  maxWaitSeconds?: number
}

export const PASS_HEADERS = /^Pass every `service-\*` response header through the proxy\/CDN/
/** 256 MiB in about 260 KB of gzip, made once. */
export const BOMB = gzipBomb(256)
