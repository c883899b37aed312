import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ADVERSARIAL_LENGTH, WORKLOADS } from '../../../test/support/adversarial-inputs'

/**
 * Far above the linear cost of any workload (milliseconds, plus a second to start the process on a loaded machine)
 * and far below its quadratic cost (a 20,000-character float took 0.6 s, so a million characters take hours).
 */
const DEADLINE_MS = 30_000

const SCRIPT = join(__dirname, '../../../test/support/adversarial-inputs.ts')

/** Runs one workload in its own process, killed at the deadline: `done …`, `failed …`, or null when it was killed. */
function runWorkload(name: string): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, name], { stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    let errors = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()))
    const timer = setTimeout(() => child.kill('SIGKILL'), DEADLINE_MS)
    child.on('error', reject)
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      if (signal === 'SIGKILL') resolve(null)
      else if (code !== 0) reject(new Error(`workload ${name} exited with ${code}: ${errors}`))
      else resolve(output.trim())
    })
  })
}

describe(`every value parser, LIKE and array operator runs in linear time on ${ADVERSARIAL_LENGTH.toLocaleString('en')}-character adversarial inputs`, () => {
  it.each(Object.keys(WORKLOADS))(
    '%s',
    async (name) => {
      const result = await runWorkload(name)
      expect(result, `${name} did not finish within ${DEADLINE_MS / 1000} s`).not.toBeNull()
      expect(result).toMatch(/^done /)
    },
    DEADLINE_MS + 30_000
  )
})
