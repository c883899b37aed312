/** Values of a control message's `headers.control`. */
export const CONTROL = {
  upToDate: 'up-to-date',
  mustRefetch: 'must-refetch',
  snapshotEnd: 'snapshot-end'
} as const
export type ControlName = (typeof CONTROL)[keyof typeof CONTROL]
