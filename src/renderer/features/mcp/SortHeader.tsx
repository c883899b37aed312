import type { SortDirection } from './budget-sort'

/** A column header that sorts its table; aria-sort says how it is sorted now. */
export function SortHeader<K extends string>({
  column,
  label,
  sort,
  onSort
}: {
  column: K
  label: string
  sort: { key: K; direction: SortDirection }
  onSort: (column: K) => void
}) {
  const active = sort.key === column
  return (
    <th aria-sort={active ? sort.direction : 'none'}>
      <button type="button" className="link" onClick={() => onSort(column)} data-testid={`sort-${column}`}>
        {label}
        {active ? (sort.direction === 'ascending' ? ' ▲' : ' ▼') : ''}
      </button>
    </th>
  )
}
