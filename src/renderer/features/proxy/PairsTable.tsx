import type { ReactNode } from 'react'

export interface Pair {
  name: string
  value: string
  className?: string
  /** Shown under the name, e.g. who set a parameter. */
  note?: ReactNode
}

/** Names and values (query parameters, headers), one a row, in monospace. */
export function PairsTable({ pairs, testId }: { pairs: Pair[]; testId?: string }) {
  return (
    <table className="grid compact pairs" data-testid={testId}>
      <tbody>
        {pairs.map((pair, index) => (
          <tr key={index} className={pair.className}>
            <td>
              <code>{pair.name}</code>
              {pair.note && (
                <>
                  <br />
                  {pair.note}
                </>
              )}
            </td>
            <td>
              <code>{pair.value}</code>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  )
}
