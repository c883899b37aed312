import { app, BrowserWindow, Menu, session } from 'electron'
import { startApp, type RunningApp } from './app'
import { ServeOptionsSchema } from './cli/serve-options'
import { defaultDataDir } from './data-dir'
import { serveContractOverIpc } from './electron/ipc'
import { addTokenToOwnRequests } from './electron/local-api-token'
import { safeStorageEncryption } from './electron/safe-storage-cipher'
import { createMainWindow } from './electron/window'

const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self' http://127.0.0.1:* http://localhost:*",
  "frame-src 'none'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'"
].join('; ')

let running: RunningApp | null = null

async function boot(): Promise<void> {
  session.defaultSession.webRequest.onHeadersReceived((details, callback) =>
    callback({ responseHeaders: { ...details.responseHeaders, 'Content-Security-Policy': [CSP] } })
  )
  session.defaultSession.setPermissionRequestHandler((_contents, _permission, callback) => callback(false))
  Menu.setApplicationMenu(Menu.buildFromTemplate([{ role: 'appMenu' }, { role: 'editMenu' }, { role: 'viewMenu' }, { role: 'windowMenu' }]))
  const serve = ServeOptionsSchema.parse({ dataDir: defaultDataDir(), port: Number(process.env.SYNCSCOPE_PORT ?? 3000) })
  running = await startApp({ serve, rendererDir: null, log: (line) => console.error(line), secretFileEncryption: safeStorageEncryption() })
  openWindow(running)
}

function openWindow(app: RunningApp): void {
  const window = createMainWindow()
  addTokenToOwnRequests(session.defaultSession, window, app.server.url, app.appToken)
  serveContractOverIpc(app.dispatch, app.core.events, window)
}

app.whenReady().then(boot, (error: unknown) => {
  console.error(error)
  app.exit(1)
})
app.on('window-all-closed', () => app.quit())
app.on('before-quit', (event) => {
  if (!running) return
  event.preventDefault()
  const closing = running
  running = null
  void closing.close().finally(() => app.quit())
})
app.on('activate', () => {
  if (BrowserWindow.getAllWindows().length === 0 && running) openWindow(running)
})
