import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findFreePort } from '../../src/main/net/free-port'
import { bearer, DENNIS, GRACE, messages, rowsOf, startProxyStack, type ProxyStack } from './support'

const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx', '/usr/local/sbin/nginx'].find((path) => spawnSync(path, ['-v']).status === 0)

/** A shared cache in front of the proxy: nginx caches the `offset=-1` snapshot (public, max-age=604800) by URL. */
function nginxConfig(dir: string, port: number, upstreamPort: number): string {
  return `master_process off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events {}
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  proxy_cache_path ${dir}/cache levels=1:2 keys_zone=shapes:1m;
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://127.0.0.1:${upstreamPort};
      proxy_http_version 1.1;
      proxy_cache shapes;
      add_header x-cache-status $upstream_cache_status always;
    }
  }
}
`
}

describe.skipIf(!NGINX)(`a real caching proxy (nginx proxy_cache) in front of the proxy${NGINX ? '' : ' — skipped: nginx is not installed'}`, () => {
  let stack: ProxyStack
  let nginx: ChildProcess
  let cacheUrl: string

  beforeAll(async () => {
    stack = await startProxyStack()
    const dir = join(stack.dir, 'nginx')
    await mkdir(dir)
    const port = await findFreePort()
    await writeFile(join(dir, 'nginx.conf'), nginxConfig(dir, port, Number(new URL(stack.proxy.url).port)))
    let output = ''
    nginx = spawn(NGINX as string, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: ['ignore', 'pipe', 'pipe'] })
    nginx.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()))
    cacheUrl = `http://127.0.0.1:${port}`
    const deadline = Date.now() + 10_000
    for (;;) {
      if (nginx.exitCode !== null) throw new Error(`nginx exited: ${output}`)
      if (await fetch(cacheUrl).then(() => true, () => false)) break
      if (Date.now() > deadline) throw new Error(`nginx did not start: ${output}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  })
  afterAll(async () => {
    if (nginx && nginx.exitCode === null) {
      const exited = new Promise((resolve) => nginx.once('exit', resolve))
      nginx.kill('SIGTERM')
      await exited
    }
    await stack?.close()
  })

  const viaCache = async (userId: string | null) => fetch(`${cacheUrl}/api/shapes/my-issues?offset=-1`, { headers: userId ? bearer(await stack.accessToken(userId)) : {} })

  it('serves each user only their own cached rows, and nothing to a caller without credentials', async () => {
    const graceToken = bearer(await stack.accessToken(GRACE))
    const first = await fetch(`${cacheUrl}/api/shapes/my-issues?offset=-1`, { headers: graceToken })
    expect(first.headers.get('x-cache-status')).toBe('MISS')
    const graceRows = rowsOf(await messages(first))
    expect(graceRows.length).toBeGreaterThan(0)
    const again = await fetch(`${cacheUrl}/api/shapes/my-issues?offset=-1`, { headers: graceToken })
    expect(again.headers.get('x-cache-status')).toBe('HIT')
    expect(rowsOf(await messages(again))).toEqual(graceRows)

    const dennis = await viaCache(DENNIS)
    expect(dennis.status).toBe(200)
    expect(dennis.headers.get('x-cache-status')).not.toBe('HIT')
    const dennisRows = rowsOf(await messages(dennis))
    expect(dennisRows.length).toBeGreaterThan(0)
    expect(dennisRows.every((row) => row.owner_id === DENNIS)).toBe(true)

    const anonymous = await viaCache(null)
    expect(anonymous.status).toBe(401)

    const graceLater = await viaCache(GRACE)
    expect(rowsOf(await messages(graceLater)).every((row) => row.owner_id === GRACE)).toBe(true)
  })
})
