/** Where Chromium is (see the `chromium` facility): CHROMIUM_PATH, `chromium` on PATH, or Playwright's own. */
export { chromiumPath } from '../test/support/facilities'

export const chromiumArgs = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic'
]
