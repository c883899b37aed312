import type { ReactNode } from 'react'

export interface ValueTableColumn {
  name: string
  /** Shown under the name (e.g. the Postgres type). */
  note?: string
}

export interface ValueTableProps {
  columns: ReadonlyArray<ValueTableColumn>
  /** Cells in column order; null shows as a greyed NULL. */
  rows: ReadonlyArray<{ key: string | number; cells: ReadonlyArray<unknown> }>
  /** Rows beyond this many are not rendered. */
  limit?: number
  label?: string
  testId?: string
  compact?: boolean
}

const cell = (value: unknown): ReactNode =>
  value === null ? 'NULL' : typeof value === 'string' ? value : (JSON.stringify(value) ?? '')

/** Rows of values under their column names: query results, shape rows, subset rows. */
export function ValueTable({ columns, rows, limit, label, testId, compact = true }: ValueTableProps) {
  return (
    <table className={compact ? 'grid compact' : 'grid'} aria-label={label} data-testid={testId}>
      <thead>
        <tr>
          {columns.map((column) => (
            <th key={column.name} title={column.note}>
              {column.name}
              {column.note && <small> {column.note}</small>}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.slice(0, limit ?? rows.length).map((row) => (
          <tr key={row.key}>
            {row.cells.map((value, index) => (
              <td key={columns[index]?.name ?? index} className={value === null ? 'null' : ''}>
                {cell(value)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  )
}
