/** A Postgres identifier as Postgres prints it: bare when it is lower-case letters, digits, `_` and `$`, else quoted. */
export const printedIdentifier = (name: string): string =>
  /^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replaceAll('"', '""')}"`

/** `public.issues`, `public."UserSettings"`, `"my schema"."a.b"`. */
export const printedTableName = (table: { schema: string; name: string }): string =>
  `${printedIdentifier(table.schema)}.${printedIdentifier(table.name)}`
