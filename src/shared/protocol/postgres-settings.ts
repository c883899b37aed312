/**
 * Session settings under which Postgres formats every value, on snapshot and replication connections alike: the
 * protocol sends values as Postgres's text output, so these fix what that text looks like.
 */
export const DISPLAY_SETTINGS: ReadonlyArray<readonly [string, string]> = [
  ['DateStyle', 'ISO, DMY'],
  ['TimeZone', 'UTC'],
  ['extra_float_digits', '1'],
  ['bytea_output', 'hex'],
  ['IntervalStyle', 'iso_8601']
]
