import { test } from '@playwright/test'
import { availability, type Facility } from '../test/support/facilities'

/**
 * In a test or fixture: goes on where `facilities` are present, fails with one line where one is declared in
 * SYNCSCOPE_REQUIRE but missing, and skips the test with the reason elsewhere (see test/support/facilities.ts).
 */
export function needFacilities(facilities: Facility[]): void {
  const found = availability(facilities)
  if (found.kind === 'required') throw found.error
  if (found.kind === 'skipped') test.skip(true, found.reason)
}
