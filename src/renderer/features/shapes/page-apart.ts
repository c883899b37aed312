/**
 * The app's shape server as this page should dial it. Chromium opens at most six HTTP/1.1 connections per host and
 * port, and the workbench holds one per live client (up to ten): on the page's own host they would leave the page's
 * calls waiting. When the shape server is the page's own origin on a loopback name, the clients dial the other
 * loopback name (127.0.0.1 ↔ localhost), a separate connection pool for the same server. The Electron window (a
 * file:// page) lifts the limit for loopback instead (`--ignore-connections-limit`, src/main/electron/).
 */
export function shapeServerApartFromPage(serverUrl: string, pageOrigin: string): string {
  let server: URL
  try {
    server = new URL(serverUrl)
  } catch {
    return serverUrl
  }
  if (server.origin !== pageOrigin) return serverUrl
  const other = server.hostname === '127.0.0.1' ? 'localhost' : server.hostname === 'localhost' ? '127.0.0.1' : null
  if (other === null) return serverUrl
  server.hostname = other
  return server.origin
}
