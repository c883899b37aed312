/** A value given as is, or computed per request by a (sync or async) function, e.g. a token that rotates. */
export type Resolvable<T> = T | (() => T | Promise<T>)

export type ResolvableRecord = Record<string, Resolvable<string | undefined>>

/** Resolves every entry at once (in parallel); entries resolving to undefined are left out. */
export async function resolveRecord(record: ResolvableRecord): Promise<Record<string, string>> {
  const entries = await Promise.all(
    Object.entries(record).map(
      async ([name, value]) => [name, typeof value === 'function' ? await value() : value] as const
    )
  )
  return Object.fromEntries(entries.filter((entry): entry is readonly [string, string] => entry[1] !== undefined))
}
