import { ESLint } from 'eslint'
import { describe, expect, it } from 'vitest'

const eslint = new ESLint({ cwd: process.cwd() })

/** The room rule's messages for `code` as if it were the file at `path` (the file need not exist). */
async function stageMessages(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path })
  return (result?.messages ?? [])
    .filter((message) => message.ruleId === 'syncscope/room-imports')
    .map((message) => message.message)
}

describe('the stage order of src/main/shapes (STAGES in scripts/eslint-room-imports.mjs)', () => {
  it.each([
    [
      'src/main/shapes/definition/probe.ts',
      'storage',
      "import type { Shape } from '../storage/shape'\nexport type P = Shape\n"
    ],
    ['src/main/shapes/storage/probe.ts', 'live', "import { Live } from '../live/live'\nexport const p = Live\n"],
    [
      'src/main/shapes/storage/probe.ts',
      'snapshot',
      "import { runSnapshot } from '../snapshot/snapshot'\nexport const p = runSnapshot\n"
    ],
    [
      'src/main/shapes/snapshot/probe.ts',
      'subquery',
      "import type { SubqueryRuntime } from '../subquery/runtime'\nexport type P = SubqueryRuntime\n"
    ],
    [
      'src/main/shapes/subquery/probe.ts',
      'replication',
      "import type { ReplicationStream } from '../replication'\nexport type P = ReplicationStream\n"
    ],
    ['src/main/shapes/replication/probe.ts', 'live', "import { Live } from '../live/live'\nexport const p = Live\n"],
    [
      'src/main/shapes/live/probe.ts',
      'http',
      "import type { AnswerTerms } from '../http/answer'\nexport type P = AnswerTerms\n"
    ]
  ])(
    '%s may not import stage %s: an import up the order (or across a level) fails lint',
    async (path, target, code) => {
      const messages = await stageMessages(path, code)
      expect(messages).toHaveLength(1)
      expect(messages[0]).toContain(`may not import stage ${target}`)
    }
  )

  it('imports down the order pass', async () => {
    const code = [
      "import { Live } from '../live/live'",
      "import { definitionTables } from '../definition/filter'",
      "import type { Shape } from '../storage/shape'",
      'export const p = [Live, definitionTables]',
      'export type S = Shape'
    ].join('\n')
    expect(await stageMessages('src/main/shapes/http/probe.ts', `${code}\n`)).toEqual([])
  })

  it('a stage the order does not name is refused until it is given a place', async () => {
    const messages = await stageMessages(
      'src/main/shapes/caches/probe.ts',
      "import { Live } from '../live/live'\nexport const p = Live\n"
    )
    expect(messages).toEqual([expect.stringContaining('stage caches has no place in STAGES')])
  })
})
