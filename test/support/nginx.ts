import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { findFreePort } from '../../src/main/net/free-port'
import { onPath } from './facilities'

export interface RunningNginx {
  url: string
  close(): Promise<void>
}

/** A sound caching proxy: HTTP/1.1 to the upstream, a cache keyed on the whole URL (nginx's default key). */
export const SOUND = 'proxy_http_version 1.1; proxy_set_header Connection ""; proxy_cache shapes;'

/**
 * nginx (from PATH) as a reverse proxy in front of `upstream` with these `location` directives (and `http` ones) — the
 * place a test puts a misconfiguration; the long read timeout outlasts a long-poll. Tests that call it are grouped with
 * `describeWith(['nginx'], …)` (facility-tests.ts).
 */
export async function startNginx(upstream: string, location: string, http = ''): Promise<RunningNginx> {
  const binary = onPath('nginx')
  if (!binary) throw new Error('nginx is not on PATH')
  const dir = await mkdtemp(join(tmpdir(), 'syncscope-nginx-'))
  const port = await findFreePort()
  const config = `master_process off;
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
  ${http}
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass ${upstream};
      proxy_read_timeout 90s;
      add_header x-cache-status $upstream_cache_status always;
      ${location}
    }
  }
}
`
  await writeFile(join(dir, 'nginx.conf'), config)
  let output = ''
  const nginx: ChildProcess = spawn(binary, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], {
    stdio: ['ignore', 'pipe', 'pipe']
  })
  nginx.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()))
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 10_000
  for (;;) {
    if (nginx.exitCode !== null) throw new Error(`nginx exited: ${output}`)
    if (
      await fetch(url).then(
        () => true,
        () => false
      )
    )
      break
    if (Date.now() > deadline) throw new Error(`nginx did not start: ${output}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return {
    url,
    async close() {
      if (nginx.exitCode === null) {
        const exited = new Promise((resolve) => nginx.once('exit', resolve))
        nginx.kill('SIGTERM')
        await exited
      }
      await rm(dir, { recursive: true, force: true })
    }
  }
}
