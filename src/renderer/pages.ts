import type { ComponentType } from 'react'
import { DatabaseView } from './features/database/DatabaseView'
import { SqlConsole } from './features/sql/SqlConsole'

export interface Page {
  id: string
  title: string
  Component: ComponentType
}

/** The app's pages in navigation order; each feature adds itself here with one line. */
export const pages: Page[] = [
  { id: 'database', title: 'Database', Component: DatabaseView },
  { id: 'sql', title: 'SQL console', Component: SqlConsole }
]
