import { existsSync } from 'node:fs'

/** Debian's Chromium (or CHROMIUM_PATH) where present, else Playwright's own managed browser (undefined). */
export const chromiumPath = [process.env.CHROMIUM_PATH, '/usr/bin/chromium'].find(
  (path): path is string => !!path && existsSync(path)
)

export const chromiumArgs = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic'
]
