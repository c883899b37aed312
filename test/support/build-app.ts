import { spawnSync } from 'node:child_process'

/** Global setup of vitest and Playwright: tests run bin/syncscope.js, which runs the built CLI; build it when stale. */
export default function buildApp(): void {
  const result = spawnSync(process.execPath, ['scripts/ensure-build.mjs'], { stdio: 'inherit' })
  if (result.status !== 0) throw new Error('electron-vite build failed (see above): the tests run the built CLI')
}
