import { describe, expect, it } from 'vitest'
import { PositionLedger } from '../../../src/main/shapes/replication/position-ledger'

describe('the replication position ledger', () => {
  it('skips what was applied before, starts after it, and reports what was handed over until idle', () => {
    const ledger = new PositionLedger(100n, false)
    expect(ledger.startLsn).toBe(100n)
    expect(ledger.needsApplying(100n)).toBe(false)
    expect(ledger.needsApplying(101n)).toBe(true)
    ledger.received(300n)
    ledger.applied(150n)
    ledger.settled(150n, 160n)
    expect(ledger.startLsn).toBe(150n)
    expect(ledger.toReport(false)).toBe(160n)
    expect(ledger.toReport(false)).toBeNull()
    expect(ledger.toReport(true)).toBe(300n)
    // positions never go back
    ledger.received(200n)
    expect(ledger.toReport(true)).toBeNull()
  })

  it('acknowledges what was settled, once per move, again when asked, and anew to a new session', () => {
    const ledger = new PositionLedger(null, false)
    expect(ledger.toAcknowledge(false)).toBe(0n)
    expect(ledger.toAcknowledge(false)).toBeNull()
    expect(ledger.toAcknowledge(true)).toBe(0n)
    ledger.settled(10n, 20n)
    expect(ledger.toAcknowledge(false)).toBe(20n)
    ledger.settled(5n, 15n)
    expect(ledger.toAcknowledge(false)).toBeNull()
    ledger.sessionOpened()
    expect(ledger.toAcknowledge(false)).toBe(20n)
  })

  it('with awaitDurable: acknowledges a transaction only once its commit is durable, in order', () => {
    const ledger = new PositionLedger(null, true)
    ledger.toAcknowledge(false)
    ledger.settled(10n, 20n)
    ledger.settled(30n, 40n)
    expect(ledger.toAcknowledge(false)).toBeNull()
    // a keepalive moves the confirmed position only when nothing waits to be made durable
    ledger.keepalive(50n, true)
    expect(ledger.toAcknowledge(false)).toBeNull()
    ledger.durableThrough(10n)
    expect(ledger.toAcknowledge(false)).toBe(20n)
    ledger.durableThrough(35n)
    expect(ledger.toAcknowledge(false)).toBe(40n)
    ledger.keepalive(50n, false)
    expect(ledger.toAcknowledge(false)).toBeNull()
    ledger.keepalive(50n, true)
    expect(ledger.toAcknowledge(false)).toBe(50n)
    // durable already: acknowledgeable at once
    ledger.settled(20n, 60n)
    expect(ledger.toAcknowledge(false)).toBe(60n)
  })

  it('forgets every position of a lost slot', () => {
    const ledger = new PositionLedger(500n, true)
    ledger.received(900n)
    ledger.settled(600n, 700n)
    expect(ledger.toReport(true)).toBe(900n)
    ledger.slotLost()
    expect(ledger.startLsn).toBe(0n)
    expect(ledger.needsApplying(1n)).toBe(true)
    ledger.received(50n)
    expect(ledger.toReport(true)).toBe(50n)
    // the transaction waiting for durability belonged to the old slot
    ledger.durableThrough(600n)
    ledger.settled(10n, 30n)
    expect(ledger.toAcknowledge(true)).toBe(30n)
  })
})
