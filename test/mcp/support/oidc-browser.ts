// A headless browser for logins in tests, apart from oauth-server.ts so that a process that only browses (the
// stand-in browser a CLI opens) does not load oidc-provider.

function cookieHeader(jar: Map<string, string>): string {
  return [...jar].map(([name, value]) => `${name}=${value}`).join('; ')
}

function formOf(html: string): { action: string; fields: Record<string, string> } {
  const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1]
  if (!action) throw new Error(`no form on the page: ${html.slice(0, 300)}`)
  const fields: Record<string, string> = {}
  for (const input of html.matchAll(/<input[^>]*>/g)) {
    const name = /name="([^"]+)"/.exec(input[0])?.[1]
    if (name) fields[name] = /value="([^"]*)"/.exec(input[0])?.[1] ?? ''
  }
  return { action, fields }
}

/**
 * A headless "browser" for oidc-provider's dev screens: follows the authorisation URL, logs in as `login`, grants
 * consent, and stops at the redirect to the app, whose URL it returns (not fetched).
 */
export async function authorizeInBrowser(authorizeUrl: string, login = 'alice'): Promise<string> {
  const jar = new Map<string, string>()
  let url = authorizeUrl
  let method = 'GET'
  let body: string | undefined
  const origin = new URL(authorizeUrl).origin
  for (let hop = 0; hop < 20; hop += 1) {
    const response = await fetch(url, {
      method,
      redirect: 'manual',
      headers: { cookie: cookieHeader(jar), ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      ...(body ? { body } : {})
    })
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(';')
      const at = pair?.indexOf('=') ?? -1
      if (pair && at > 0) jar.set(pair.slice(0, at), pair.slice(at + 1))
    }
    const location = response.headers.get('location')
    if (location) {
      const next = new URL(location, url).toString()
      if (!next.startsWith(origin)) return next
      ;[url, method, body] = [next, 'GET', undefined]
      continue
    }
    const html = await response.text()
    const form = formOf(html)
    if (form.fields.prompt === 'login') Object.assign(form.fields, { login, password: 'pw' })
    ;[url, method, body] = [new URL(form.action, url).toString(), 'POST', new URLSearchParams(form.fields).toString()]
  }
  throw new Error('the authorisation flow did not reach the app within 20 hops')
}
