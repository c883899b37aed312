import { contextBridge, ipcRenderer, type IpcRendererEvent } from 'electron'
import { IPC_CALL, IPC_EVENT } from '../shared/ipc-channels'

/** Only a generic bridge: the contract itself lives in src/shared/contract.ts. */
const bridge = {
  call: (name: string, input: unknown): Promise<unknown> => ipcRenderer.invoke(IPC_CALL, name, input),
  subscribe(listener: (name: string, payload: unknown) => void): () => void {
    const forward = (_event: IpcRendererEvent, name: string, payload: unknown) => listener(name, payload)
    ipcRenderer.on(IPC_EVENT, forward)
    return () => ipcRenderer.removeListener(IPC_EVENT, forward)
  }
}

contextBridge.exposeInMainWorld('syncscope', bridge)

export type SyncscopeBridge = typeof bridge
