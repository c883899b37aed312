import type { BrowserWindow, Session } from 'electron'
import { TOKEN_HEADER } from '../net/guard'

/**
 * The app window is a file:// page, so its requests carry `Origin: null`, which the shape API refuses to any web page
 * (a sandboxed iframe of any site sends it too). The shell adds this run's token to the requests of its own window
 * to its own server — and only those — so the workbench can call the local shape API.
 */
export function addTokenToOwnRequests(session: Session, window: BrowserWindow, serverUrl: string, token: string): void {
  const origin = new URL(serverUrl).origin
  session.webRequest.onBeforeSendHeaders({ urls: [`${origin}/*`] }, (details, callback) => {
    const own = details.webContentsId === window.webContents.id && new URL(details.url).origin === origin
    callback({ requestHeaders: own ? { ...details.requestHeaders, [TOKEN_HEADER]: token } : details.requestHeaders })
  })
}
