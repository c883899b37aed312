import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'

const dir = mkdtempSync(join(tmpdir(), 'syncscope-cycles-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function tree(name: string, files: Record<string, string>): string {
  const root = join(dir, name)
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  return root
}

const check = (root: string, ...flags: string[]) =>
  spawnSync(process.execPath, ['scripts/check-import-cycles.mjs', ...flags, root], { encoding: 'utf8' })

test('an import cycle through three files fails the check, naming the files in order', () => {
  const root = tree('cycle', {
    'a.ts': "import { b } from './room/b'\nexport const a = b\n",
    'room/b.ts': "import { c } from '../c'\nexport const b = c\n",
    'c.ts': "export { a as c } from './a'\n"
  })
  const result = check(root)
  expect(result.status).toBe(1)
  expect(result.stderr).toMatch(/import cycle: .*a\.ts → .*room\/b\.ts → .*c\.ts → .*a\.ts/)
})

test('imports erased at run time (import type, every name a type) make no run-time cycle: a type-only one, counted', () => {
  const root = tree('types', {
    'a.ts': "import type { B } from './b'\nexport interface A { b?: B }\nexport const a = 1\n",
    'b.ts': "import { a, type A } from './a'\nexport interface B { a?: A }\nexport const b = a\n",
    'c.ts': "import { type B } from './b'\nexport type C = B\n"
  })
  const result = check(root)
  expect(result.stderr).not.toMatch(/^import cycle/m)
  expect(result.stderr).toMatch(/^type-only import cycle: .*a\.ts ⇢ .*b\.ts → .*a\.ts$/m)
  expect(result.stderr).toMatch(/^1 type-only import cycle\(s\) among 3 files \(they fail with --types\)/m)
  expect(result.status).toBe(0)
  expect(check(root, '--types').status).toBe(1)
})

test('a tree without cycles, types included, passes silently with --types', () => {
  const root = tree('acyclic', {
    'a.ts': "import type { B } from './b'\nexport const a = (b: B) => b\n",
    'b.ts': 'export type B = number\nexport const b = 1\n',
    'c.ts': "import { a } from './a'\nimport { b, type B } from './b'\nexport const c: B = a(b)\n"
  })
  const result = check(root, '--types')
  expect(result.stderr).toBe('')
  expect(result.status).toBe(0)
})
