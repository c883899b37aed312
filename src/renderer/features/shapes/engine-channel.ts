import { EngineHost } from './engine/host'
import type { Port } from './engine/protocol'
import type { EngineChannel } from './session'

/**
 * The workbench's worker (parses responses and keeps the rows off the page's thread). Where no worker can start (a
 * policy or a browser refusing it), the engine runs on the page's thread behind a MessageChannel, and `fallback` says why.
 */
export function engineChannel(): EngineChannel & { fallback: string | null } {
  try {
    const worker = new Worker(new URL('./engine/worker.ts', import.meta.url), {
      type: 'module',
      name: 'shape-workbench'
    })
    return { port: worker as unknown as Port, end: () => worker.terminate(), fallback: null }
  } catch (error) {
    const channel = new MessageChannel()
    new EngineHost(channel.port1 as unknown as Port)
    return {
      port: channel.port2 as unknown as Port,
      end: () => {
        channel.port1.close()
        channel.port2.close()
      },
      fallback: `the workbench's worker could not start (${(error as Error).message}): rows are parsed on the page's thread`
    }
  }
}
