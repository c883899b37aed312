import { beforeAll, describe, it } from 'vitest'
import { availability, skippedTitle, type Facility } from './facilities'

/**
 * A group of tests that need `facilities` (see facilities.ts): run where they are present; where one is declared in
 * SYNCSCOPE_REQUIRE but missing, every test of the group fails with one line naming it (the group's first hook throws,
 * so none of its own hooks start a server that cannot start); elsewhere skipped, the reason in the title.
 */
export function describeWith(facilities: Facility[], title: string, body: () => void): void {
  const found = availability(facilities)
  if (found.kind === 'skipped') {
    describe.skip(skippedTitle(title, found.reason), body)
    return
  }
  describe(title, () => {
    if (found.kind === 'required')
      beforeAll(() => {
        throw found.error
      })
    body()
  })
}

/** One test that needs `facilities`: run, failed with one line naming the missing declared one, or skipped with the reason. */
export function itWith(
  facilities: Facility[],
  title: string,
  test: () => Promise<void> | void,
  timeout?: number
): void {
  const found = availability(facilities)
  if (found.kind === 'skipped') return it.skip(skippedTitle(title, found.reason), test)
  if (found.kind === 'required')
    return it(title, () => {
      throw found.error
    })
  it(title, test, timeout)
}
