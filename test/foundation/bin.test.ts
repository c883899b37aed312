import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'

const copy = mkdtempSync(join(tmpdir(), 'syncscope-bin-'))
afterAll(() => rmSync(copy, { recursive: true, force: true }))

test('bin/syncscope.js without a build says in one line how to build it', () => {
  mkdirSync(join(copy, 'bin'))
  copyFileSync(join(__dirname, '../../bin/syncscope.js'), join(copy, 'bin/syncscope.js'))
  const result = spawnSync(process.execPath, [join(copy, 'bin/syncscope.js'), '--help'], { encoding: 'utf8' })
  expect(result.status).toBe(1)
  expect(result.stdout).toBe('')
  expect(result.stderr.trim().split('\n')).toEqual([
    expect.stringMatching(/the CLI is not built .*run `npm run build`/)
  ])
})

test('bin/syncscope.js runs the built CLI', () => {
  const result = spawnSync(process.execPath, [join(__dirname, '../../bin/syncscope.js'), '--help'], {
    encoding: 'utf8'
  })
  expect(result.status).toBe(0)
  expect(result.stdout).toContain('usage:')
})
