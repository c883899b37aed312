// The stand-in browser's process (see stand-in-browser.ts): `… stand-in-browser-main.ts <authorisation URL>`.
import { authorizeInBrowser } from './oidc-browser'

async function main(): Promise<void> {
  const url = process.argv[2] ?? ''
  const callback = await authorizeInBrowser(url)
  const response = await fetch(callback)
  const page = (await response.text()).replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ')
  console.log(`stand-in browser: ${url} → ${response.status} ${callback}\n${page.trim()}`)
}

main().catch((error: unknown) => {
  console.log(`stand-in browser: ${process.argv[2]}: ${(error as Error).message}`)
  process.exitCode = 1
})
