// The browser `syncscope mcp login` opens in the conformance run (installed as xdg-open on its PATH): it loads the
// authorisation URL and follows every redirect, as a browser does, which ends at Syncscope's loopback callback (the
// suite's authorisation servers approve at once, without a page).
/* global process, fetch, console */
const [url] = process.argv.slice(2)
try {
  const response = await fetch(url, { redirect: 'follow' })
  const page = await response.text()
  console.log(`stand-in browser: ${response.status} ${response.url}\n${page.replace(/<[^>]+>/g, ' ').trim()}`)
} catch (error) {
  console.log(`stand-in browser: ${url}: ${error.message}`)
  process.exitCode = 1
}
