#!/usr/bin/env node
// Runs the CLI as electron-vite built it (out/main/cli.js, from src/main/cli.ts).
const { existsSync } = require('node:fs')
const { join } = require('node:path')

const cli = join(__dirname, '..', 'out', 'main', 'cli.js')
if (!existsSync(cli)) {
  process.stderr.write(
    `syncscope: the CLI is not built (${cli} is missing): run \`npm run build\` in ${join(__dirname, '..')} first\n`
  )
  process.exit(1)
}
require(cli)
