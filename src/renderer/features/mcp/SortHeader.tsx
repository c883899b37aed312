import type { SortDirection } from './budget-sort'

/** A column of a sortable table: with `column` its header sorts the table, without it is a plain header. */
export interface HeadColumn<K extends string> {
  column?: K
  label: string
}

/** The header row of a sortable table; aria-sort says how it is sorted now. */
export function SortableHead<K extends string>({
  columns,
  sort,
  onSort
}: {
  columns: HeadColumn<K>[]
  sort: { key: K; direction: SortDirection }
  onSort: (column: K) => void
}) {
  return (
    <thead>
      <tr>
        {columns.map(({ column, label }) => {
          if (!column) return <th key={label}>{label}</th>
          const active = sort.key === column
          return (
            <th key={label} aria-sort={active ? sort.direction : 'none'}>
              <button type="button" className="link" onClick={() => onSort(column)} data-testid={`sort-${column}`}>
                {label}
                {active ? (sort.direction === 'ascending' ? ' ▲' : ' ▼') : ''}
              </button>
            </th>
          )
        })}
      </tr>
    </thead>
  )
}
