import { describe, expect, it } from 'vitest'
import { chaosSeed, runSubqueryChaos } from '../support/subquery-chaos'

/**
 * The short form of the randomized subquery test (the long one is test/soak/subquery-random.test.ts): random
 * writes over issues, projects and orgs while the official ShapeStream and TanStack DB collections follow five
 * subquery shapes over long-poll and SSE, with one kill -9 of the server. Replay a failure with SUBQUERY_SEED=<seed>.
 */
describe('subquery shapes under random writes (short)', () => {
  it('every client of every subquery shape ends with exactly the rows of its SELECT', async () => {
    const seed = chaosSeed()
    const report = await runSubqueryChaos({ seed, seconds: 16, writers: 3, killServer: true })
    console.log(`subquery random: seed ${seed}, ${report.committed} transactions, ${report.clients} clients`)
    expect(report.failures, `seed ${seed} (replay with SUBQUERY_SEED=${seed})`).toEqual([])
  }, 120_000)
})
