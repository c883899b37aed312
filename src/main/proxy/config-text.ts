/** The config file as the renderer sees it: the upstream secret replaced by a mask, put back on save. */

export const SECRET_MASK = '********'

function withSecret(text: string, replace: (secret: unknown) => unknown): string {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return text
  }
  const upstream = (json as { upstream?: { secret?: unknown } } | null)?.upstream
  if (!upstream || typeof upstream !== 'object' || upstream.secret === undefined) return text
  upstream.secret = replace(upstream.secret)
  return `${JSON.stringify(json, null, 2)}\n`
}

export const maskSecret = (text: string) => withSecret(text, () => SECRET_MASK)

/** The mask left untouched means "keep the secret in force". */
export const restoreSecret = (text: string, current: string | undefined) =>
  withSecret(text, (secret) => (secret === SECRET_MASK ? current : secret))
