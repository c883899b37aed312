import { LOOPBACK_NAMES } from '../../net/host-rule'

/** https:, or http: on loopback: a URL whose traffic nobody on the network reads. */
export function httpsOrLoopback(url: string): boolean {
  if (!URL.canParse(url)) return false
  const { protocol, hostname } = new URL(url)
  return protocol === 'https:' || (protocol === 'http:' && LOOPBACK_NAMES.includes(hostname))
}

/**
 * Whether an authorisation URL from a server's metadata may go to the browser: https:, or http: on loopback. The
 * OS opener hands any other scheme to whatever program claims it (smb: mounts a share, file: runs a file, an app
 * scheme drives that app).
 */
export const openableInBrowser = httpsOrLoopback

export const OPENABLE = 'only https: URLs (and http: on loopback) are opened in the browser; refused'
