import { app, BrowserWindow, dialog, Menu, session } from 'electron'
import { startApp, type RunningApp } from './app'
import { ServeOptionsSchema } from './settings/serve-options'
import { contentSecurityPolicy } from './csp'
import { defaultDataDir } from './data-dir'
import { serveContractOverIpc } from './electron/ipc'
import { addTokenToOwnRequests } from './electron/local-api-token'
import { safeStorageEncryption } from './electron/safe-storage-cipher'
import { createMainWindow } from './electron/window'
import { shellFolders } from './shell-settings'

// The workbench holds one connection per live client (up to ten) to the app's shape server on loopback: Chromium's
// six per host would leave the rest waiting. The window's own calls go over IPC, so only these requests are lifted.
app.commandLine.appendSwitch('ignore-connections-limit', '127.0.0.1,localhost')

let running: RunningApp | null = null

async function boot(): Promise<void> {
  const csp = contentSecurityPolicy()
  session.defaultSession.webRequest.onHeadersReceived((details, callback) =>
    callback({ responseHeaders: { ...details.responseHeaders, 'Content-Security-Policy': [csp] } })
  )
  session.defaultSession.setPermissionRequestHandler((_contents, _permission, callback) => callback(false))
  Menu.setApplicationMenu(
    Menu.buildFromTemplate([{ role: 'appMenu' }, { role: 'editMenu' }, { role: 'viewMenu' }, { role: 'windowMenu' }])
  )
  const folders = shellFolders(defaultDataDir())
  // port 0: a free port each run; the window learns the URL from main (shapesWorkbench.localServer)
  const serve = ServeOptionsSchema.parse({
    dataDir: folders.dataDir,
    workspace: folders.workspace,
    port: Number(process.env.SYNCSCOPE_PORT ?? 0)
  })
  running = await startApp({
    serve,
    rendererDir: null,
    log: (line) => console.error(line),
    secretFileEncryption: safeStorageEncryption()
  })
  openWindow(running)
}

function openWindow(app: RunningApp): void {
  const window = createMainWindow()
  addTokenToOwnRequests(session.defaultSession, window, app.server.url, app.appToken)
  serveContractOverIpc(app.dispatch, app.core.events, window)
}

app
  .whenReady()
  .then(boot)
  .catch((error: unknown) => {
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error)
    console.error(`syncscope: ${message}`)
    dialog.showErrorBox('Syncscope cannot start', message ?? 'failed without saying why')
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
