/**
 * The path a request is routed and authorised by: percent-decoded (a malformed escape stays as written and matches no
 * route) with repeated slashes folded, so `/v1//shape` and `/v1/%73hape` reach what `/v1/shape` reaches. Dot segments
 * are already resolved by URL parsing (`//v1/../v1/shape` is `//v1/shape` there); an encoded `%2F..` is not resolved
 * after decoding and matches no route. `trailingSlash: 'drop'` makes `/v1/shape/` `/v1/shape` too.
 */
export function routingPath(pathname: string, options: { trailingSlash?: 'keep' | 'drop' } = {}): string {
  let decoded = pathname
  try {
    decoded = decodeURIComponent(pathname)
  } catch {
    // a malformed escape matches no route
  }
  const folded = decoded.replace(/\/{2,}/g, '/')
  return options.trailingSlash === 'drop' && folded.length > 1 ? folded.replace(/\/+$/, '') : folded
}
