import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import type { ServerResponse } from 'node:http'
import { extname, join, normalize, sep } from 'node:path'
import { contentSecurityPolicy } from '../csp'

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2'
}

/**
 * A worker's script (the build names the Shape workbench's `assets/worker-<hash>.js`): a worker gets its policy from
 * its own response, not from the page, so it is sent the page's.
 */
const isWorkerScript = (file: string) => /(^|[/\\])worker-[\w-]+\.js$/.test(file)

/** Serves a file of the built renderer; unknown paths fall back to index.html (client-side routes). */
export async function serveStatic(root: string, pathname: string, res: ServerResponse): Promise<void> {
  let decoded: string
  try {
    decoded = decodeURIComponent(pathname)
  } catch {
    res.writeHead(400, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' })
    res.end(JSON.stringify({ error: { code: 'bad_path', message: `the path ${pathname} has a malformed %-escape` } }))
    return
  }
  const relative = normalize(decoded).replace(/^([/\\])+/, '')
  let file = join(root, relative)
  if (file !== root && !file.startsWith(root + sep)) {
    res.writeHead(404).end()
    return
  }
  const info = await stat(file).catch(() => null)
  if (!info?.isFile()) file = join(root, 'index.html')
  const isIndex = file.endsWith('index.html')
  res.writeHead(200, {
    'content-type': CONTENT_TYPES[extname(file)] ?? 'application/octet-stream',
    'cache-control': isIndex ? 'no-store' : 'private, max-age=3600',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    ...(isIndex || isWorkerScript(file) ? { 'content-security-policy': contentSecurityPolicy() } : {})
  })
  createReadStream(file).pipe(res)
}
