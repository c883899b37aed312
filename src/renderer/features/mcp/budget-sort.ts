import { useState } from 'react'

export type SortDirection = 'ascending' | 'descending'

/** A table's sort: by one column, either way; clicking the column again turns it round. */
export function useSort<K extends string>(initial: K, direction: SortDirection = 'descending') {
  const [sort, setSort] = useState<{ key: K; direction: SortDirection }>({ key: initial, direction })
  const toggle = (key: K) =>
    setSort((current) =>
      current.key === key
        ? { key, direction: current.direction === 'ascending' ? 'descending' : 'ascending' }
        : { key, direction: 'descending' }
    )
  return { sort, toggle }
}

/** Rows ordered by the value `by` gives for the sort's column; missing values (null) last either way. */
export function sortRows<R, K extends string>(
  rows: R[],
  sort: { key: K; direction: SortDirection },
  by: (row: R, key: K) => number | string | null
): R[] {
  const sign = sort.direction === 'ascending' ? 1 : -1
  return [...rows].sort((a, b) => {
    const x = by(a, sort.key)
    const y = by(b, sort.key)
    if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1
    return (typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y))) * sign
  })
}

/** A token count as a share of the context window, e.g. `1.25%`. */
export const share = (tokens: number, window: number) => `${((tokens * 100) / window).toFixed(2)}%`
