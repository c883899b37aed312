import { EngineHost } from './host'
import type { Port } from './protocol'

// The Shape workbench's worker: responses are parsed and rows kept here, off the page's thread.
new EngineHost(globalThis as unknown as Port)
