import type { ComponentType } from 'react'
import { ConformancePage } from './features/conformance/ConformancePage'
import { DatabaseView } from './features/database/DatabaseView'
import { DoctorPage } from './features/doctor/DoctorPage'
import { McpPage } from './features/mcp/McpPage'
import { ProxyPlayground } from './features/proxy/ProxyPlayground'
import { ServerPage } from './features/server/ServerPage'
import { ShapeWorkbench } from './features/shapes/ShapeWorkbench'
import { SqlConsole } from './features/sql/SqlConsole'

export interface Page {
  id: string
  title: string
  Component: ComponentType
}

/** The app's pages in navigation order; each feature adds itself here with one line. */
export const pages: Page[] = [
  { id: 'database', title: 'Database', Component: DatabaseView },
  { id: 'sql', title: 'SQL console', Component: SqlConsole },
  { id: 'shapes', title: 'Shape workbench', Component: ShapeWorkbench },
  { id: 'server', title: 'Server', Component: ServerPage },
  { id: 'proxy', title: 'Proxy playground', Component: ProxyPlayground },
  { id: 'conformance', title: 'Conformance', Component: ConformancePage },
  { id: 'doctor', title: 'Sync doctor', Component: DoctorPage },
  { id: 'mcp', title: 'MCP servers', Component: McpPage }
]
