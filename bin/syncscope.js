#!/usr/bin/env node
// Runs the TypeScript sources of the headless shell through tsx, so the CLI needs no build step.
const { register } = require('tsx/cjs/api')
register()
require('../src/main/cli.ts')
