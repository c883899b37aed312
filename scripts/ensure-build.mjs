#!/usr/bin/env node
// Builds the app (electron-vite: main with the CLI, preload, renderer) when out/ is missing or older than a source
// file, so tests that run bin/syncscope.js never run a stale build. `node scripts/ensure-build.mjs`.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const outputs = ['out/main/cli.js', 'out/main/index.js', 'out/preload/index.js', 'out/renderer/index.html'].map(
  (path) => join(root, path)
)
const inputs = ['src', 'resources', 'electron.vite.config.ts', 'package.json'].map((path) => join(root, path))

function newestChange(path) {
  if (!existsSync(path)) return 0
  const info = statSync(path)
  if (!info.isDirectory()) return info.mtimeMs
  return readdirSync(path).reduce((newest, name) => Math.max(newest, newestChange(join(path, name))), info.mtimeMs)
}

const built = Math.min(...outputs.map((path) => (existsSync(path) ? statSync(path).mtimeMs : 0)))
if (built === 0 || Math.max(...inputs.map(newestChange)) > built) {
  process.stderr.write('Building the app (electron-vite build)…\n')
  const result = spawnSync(process.platform === 'win32' ? 'npx.cmd' : 'npx', ['electron-vite', 'build'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit']
  })
  if (result.status !== 0) {
    process.stderr.write('The build failed; see the errors above.\n')
    process.exit(1)
  }
}
