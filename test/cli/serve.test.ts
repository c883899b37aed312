import { createServer, type AddressInfo } from 'node:net'
import { existsSync } from 'node:fs'
import { chmod, mkdtemp, readFile, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { clusterDirOf } from '../../src/main/db/cluster'
import { endCliRuns, runCli, waitFor } from '../support/cli-process'
import { removeDataDir } from '../support/postgres'

describe('syncscope serve', () => {
  const folders: string[] = []
  afterAll(async () => {
    await endCliRuns()
    await Promise.all(folders.map(removeDataDir))
  })

  it('prints what it serves and stops cleanly on SIGTERM, embedded Postgres included', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'syncscope-cli-'))
    folders.push(dataDir)
    const run = runCli(['serve', '--port', '0', '--data-dir', dataDir])
    await waitFor(() => run.output().stdout.includes('Press Ctrl+C to stop.'), 'the banner')
    expect(run.output().stdout).toMatch(/Shape API\s+http:\/\/127\.0\.0\.1:\d+\/v1\/shape/)
    expect(run.output().stdout).toContain(`Data folder   ${dataDir}`)
    const cluster = await clusterDirOf(join(dataDir, 'postgres'))
    expect(existsSync(join(cluster, 'postmaster.pid'))).toBe(true)
    run.child.kill('SIGTERM')
    expect(await run.exited).toBe(0)
    expect(existsSync(join(cluster, 'postmaster.pid'))).toBe(false)
  })

  it('a Ctrl+C while it starts stops it once started, embedded Postgres included (its own process group)', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'syncscope-cli-'))
    folders.push(dataDir)
    const run = runCli(['serve', '--port', '0', '--data-dir', dataDir])
    // the postmaster is up, the server is not yet: the banner comes after the database is set up
    let postmasterPid = ''
    for (const deadline = Date.now() + 60_000; !postmasterPid; await new Promise((done) => setTimeout(done, 5))) {
      if (Date.now() > deadline) throw new Error(`no postmaster.pid: ${run.output().stderr}`)
      postmasterPid = join(await clusterDirOf(join(dataDir, 'postgres')), 'postmaster.pid')
      if (!existsSync(postmasterPid)) postmasterPid = ''
    }
    expect(run.output().stdout).not.toContain('Press Ctrl+C to stop.')
    run.child.kill('SIGINT')
    expect(await run.exited).toBe(0)
    expect(run.output().stdout).toContain('SIGINT: stopping')
    expect(existsSync(postmasterPid)).toBe(false)
  })

  it('takes the shape API secret from SYNCSCOPE_SECRET, so it never shows in the process list', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'syncscope-cli-'))
    folders.push(dataDir)
    const secret = 'secret-from-the-environment-42'
    const run = runCli(['serve', '--port', '0', '--data-dir', dataDir], { ...process.env, SYNCSCOPE_SECRET: secret })
    try {
      await waitFor(() => run.output().stdout.includes('Press Ctrl+C to stop.'), 'the banner')
      const cmdline = await readFile(`/proc/${run.child.pid}/cmdline`, 'utf8')
      expect(cmdline).not.toContain(secret)
      const url = /Shape API\s+(\S+)/.exec(run.output().stdout)?.[1] as string
      expect((await fetch(`${url}?table=issues&offset=-1&where=id%3D1`)).status).toBe(401)
      expect((await fetch(`${url}?table=issues&offset=-1&where=id%3D1&secret=${secret}`)).status).toBe(200)
    } finally {
      run.child.kill('SIGTERM')
      await run.exited
    }
  })

  it('refuses a --secret-file other users can read, in one line', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'syncscope-cli-'))
    folders.push(dataDir)
    const file = join(dataDir, 'secret')
    await writeFile(file, 'readable-by-all\n')
    await chmod(file, 0o644)
    const run = runCli(['serve', '--port', '0', '--data-dir', dataDir, '--secret-file', file])
    expect(await run.exited).toBe(1)
    expect(run.output().stderr).toBe(
      `syncscope: --secret-file ${file} can be read by other users (mode 0644): run chmod 600 ${file}\n`
    )
  })

  it.each([
    [['serve', '--port', 'abc'], '--port must be a number'],
    [['serve', '--database', 'mysql://x'], '--database must be `embedded` or a postgres:// URL'],
    [['serve', '--header-brand', 'acme'], '--header-brand must be `service` or `electric`'],
    [['serve', '--ui', '--host', '0.0.0.0'], '--ui serves the app contract, which only listens on loopback'],
    [['serve', '--nope'], "Unknown option '--nope'"],
    [['frobnicate'], "unknown command 'frobnicate'"]
  ])('refuses %j with a message naming the problem, exit code 2', async (args, message) => {
    const run = runCli(args)
    expect(await run.exited).toBe(2)
    expect(run.output().stderr).toContain(message)
  })

  it('turns a start-up failure into one line with the cause and the fix, never a stack trace', async () => {
    const blocker = createServer()
    await new Promise<void>((done) => blocker.listen(0, '127.0.0.1', done))
    const busy = (blocker.address() as AddressInfo).port
    const dataDir = await mkdtemp(join(tmpdir(), 'syncscope-cli-fail-'))
    folders.push(dataDir)
    try {
      for (const [args, line] of [
        [
          ['serve', '--database', 'postgres://postgres:secret@127.0.0.1:1/postgres'],
          'syncscope: could not connect to postgres://postgres:****@127.0.0.1:1/postgres: connect ECONNREFUSED 127.0.0.1:1'
        ],
        [
          ['serve', '--port', String(busy), '--data-dir', dataDir],
          `syncscope: port ${busy} on 127.0.0.1 is in use: stop what uses it, or pick another with --port / --proxy-port (0 picks a free one)`
        ]
      ] as const) {
        const run = runCli([...args])
        expect(await run.exited).toBe(1)
        const stderr = run.output().stderr.trim().split('\n')
        expect(stderr.at(-1)).toBe(line)
        expect(stderr.filter((text) => /^\s+at |TypeError|undefined/.test(text))).toEqual([])
      }
    } finally {
      blocker.close()
    }
  })
})
