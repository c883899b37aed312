#!/usr/bin/env node
// `npm start`: the Electron app where its binary can be had, else the same UI in a browser via the headless shell.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'

const args = process.argv.slice(2)
const require = createRequire(import.meta.url)
const electronDir = join(process.cwd(), 'node_modules', 'electron')

function step(command, commandArgs, options = {}) {
  return spawnSync(command, commandArgs, { stdio: 'inherit', ...options })
}

function firstErrorLine(text) {
  return text
    .split('\n')
    .map((line) => line.trim())
    .find((line) => /error/i.test(line))
}

function electronBinary() {
  if (!existsSync(join(electronDir, 'path.txt'))) {
    process.stdout.write('Fetching the Electron binary…\n')
    const install = step(process.execPath, [join(electronDir, 'install.js')], {
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 180_000
    })
    if (install.status !== 0)
      return { error: firstErrorLine(install.stderr?.toString() ?? '') ?? 'the download failed' }
  }
  try {
    return { path: require('electron') }
  } catch (error) {
    return { error: error.message }
  }
}

function browserMode(reason) {
  process.stdout.write(
    `Electron cannot run here (${reason}): serving the same Syncscope UI in your browser instead — open the "Syncscope UI" URL below.\n`
  )
  const child = spawn(process.execPath, [join('bin', 'syncscope.js'), 'serve', '--ui', ...args], { stdio: 'inherit' })
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal))
  child.on('exit', (code) => process.exit(code ?? 0))
}

if (step('npx', ['electron-vite', 'build'], { stdio: ['ignore', 'ignore', 'inherit'] }).status !== 0) {
  process.stderr.write('The build failed; see the errors above.\n')
  process.exit(1)
}
const electron = electronBinary()
if (!electron.path) browserMode(electron.error)
else {
  const started = Date.now()
  const child = spawn(electron.path, ['.', ...args], { stdio: ['ignore', 'inherit', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk) => {
    stderr += chunk
    process.stderr.write(chunk)
  })
  child.on('exit', (code) => {
    const quickFailure = code !== 0 && Date.now() - started < 10_000
    if (quickFailure) browserMode(firstErrorLine(stderr) ?? `electron exited with ${code}`)
    else process.exit(code ?? 0)
  })
}
