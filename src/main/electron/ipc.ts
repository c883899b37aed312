import { ipcMain, type BrowserWindow } from 'electron'
import type { EventBus } from '../events'
import type { Dispatch } from '../rpc/dispatcher'
import { IPC_CALL, IPC_EVENT } from '../../shared/ipc-channels'

/** The contract over IPC: one channel for every call, one for every event. */
export function serveContractOverIpc(dispatch: Dispatch, events: EventBus, window: BrowserWindow): () => void {
  ipcMain.removeHandler(IPC_CALL)
  ipcMain.handle(IPC_CALL, (event, name: unknown, input: unknown) => {
    if (event.senderFrame?.url && !event.senderFrame.url.startsWith('file://') && !process.env.ELECTRON_RENDERER_URL) {
      return {
        ok: false,
        status: 403,
        body: { error: { code: 'foreign_frame', message: 'calls come from the app window only' } }
      }
    }
    return dispatch(String(name), input)
  })
  const unsubscribe = events.subscribe((name, payload) => {
    if (!window.isDestroyed()) window.webContents.send(IPC_EVENT, name, payload)
  })
  return () => {
    ipcMain.removeHandler(IPC_CALL)
    unsubscribe()
  }
}
