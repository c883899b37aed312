import { chmod, mkdir, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'

const TSX = resolve(__dirname, '../../../node_modules/tsx/dist/loader.mjs')

export interface StandInBrowser {
  /** PATH with the stand-in first: `syncscope mcp` opens authorisation URLs with it (xdg-open). */
  path: string
  /** What it did, one line per page it was given. */
  log: string
}

/**
 * Installs `xdg-open` in `<dir>/bin`: the browser a CLI opens, standing in for a person who logs in and approves
 * (oidc-provider's dev screens, or an authorisation server that approves at once) and is sent back to Syncscope's
 * loopback callback.
 */
export async function installStandInBrowser(dir: string): Promise<StandInBrowser> {
  const bin = join(dir, 'bin')
  const log = join(dir, 'browser.log')
  await mkdir(bin, { recursive: true })
  const opener = join(bin, 'xdg-open')
  const browser = join(__dirname, 'stand-in-browser-main.ts')
  await writeFile(opener, `#!/bin/sh\nexec "${process.execPath}" --import "${TSX}" "${browser}" "$1" >>"${log}" 2>&1\n`)
  await chmod(opener, 0o755)
  return { path: `${bin}:${process.env.PATH ?? ''}`, log }
}
