/** Rows one shape's subquery results may hold in memory by default, all its subqueries together (`--max-subquery-rows`). */
export const DEFAULT_MAX_SUBQUERY_ROWS = 1_000_000

/** A shape's subquery results outgrew the limit: the caller's to narrow (400 at creation, 409 once live). */
export class SubqueryRowsError extends Error {
  override readonly name = 'SubqueryRowsError'
  /** program_limit_exceeded: a caller's query error, answered 400 naming the where. */
  readonly code = '54000'
  constructor(limit: number) {
    super(
      `the subqueries of this where select more than ${limit.toLocaleString('en-US')} rows, the most a shape may hold in memory (--max-subquery-rows): narrow them`
    )
  }
}
