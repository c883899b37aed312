import { describe, expect, it } from 'vitest'
import { chaosSeed, runSubqueryChaos } from '../support/subquery-chaos'

/**
 * The long form of the randomized subquery test (the short one runs in `npm test`: test/shapes/subquery-random.test.ts).
 * Set SUBQUERY_SECONDS to write longer; replay a failure with SUBQUERY_SEED=<seed>.
 */
describe('subquery shapes under random writes (long)', () => {
  it('every client of every subquery shape ends with exactly the rows of its SELECT, after minutes of writes', async () => {
    const seed = chaosSeed()
    const seconds = Number(process.env.SUBQUERY_SECONDS ?? 150)
    const report = await runSubqueryChaos({ seed, seconds, writers: 4, killServer: true, catchUpMs: 120_000 })
    console.log(
      `subquery random: seed ${seed}, ${seconds} s, ${report.committed} transactions, ${report.clients} clients`
    )
    expect(report.failures, `seed ${seed} (replay with SUBQUERY_SEED=${seed})`).toEqual([])
  }, 600_000)
})
