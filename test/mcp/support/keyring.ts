import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface HeadlessKeyring {
  /** DBUS_SESSION_BUS_ADDRESS of the private session bus. */
  address: string
  stop(): Promise<void>
}

function readLine(child: ChildProcess, stream: 'stdout' | 'stderr', pattern: RegExp, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = ''
    const timer = setTimeout(() => reject(new Error(`${what} did not start: ${text}`)), 10_000)
    child[stream]?.on('data', (chunk: Buffer) => {
      text += chunk.toString()
      const match = pattern.exec(text)
      if (match) {
        clearTimeout(timer)
        resolve(match[1] ?? match[0])
      }
    })
    child.once('exit', (code) => reject(new Error(`${what} exited with ${code}: ${text}`)))
  })
}

/** The daemon's own output may sit in a pipe buffer; a store that succeeds is the proof the login keyring is unlocked. */
async function untilKeyringAnswers(address: string, keyring: ChildProcess): Promise<void> {
  const deadline = Date.now() + 10_000
  for (;;) {
    const probe = spawnSync('secret-tool', ['store', '--label=probe', 'service', 'probe', 'account', 'probe'], {
      env: { ...process.env, DBUS_SESSION_BUS_ADDRESS: address },
      input: 'probe',
      encoding: 'utf8',
      timeout: 5_000
    })
    if (probe.status === 0) return
    if (keyring.exitCode !== null || Date.now() > deadline)
      throw new Error(`gnome-keyring-daemon did not start: ${probe.stderr}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  await exited
}

/** A private D-Bus session with gnome-keyring unlocked (password "pw"), in a throwaway HOME; stopped by pid. */
export async function startHeadlessKeyring(): Promise<HeadlessKeyring> {
  const home = await mkdtemp(join(tmpdir(), 'syncscope-keyring-'))
  await mkdir(join(home, '.cache'), { recursive: true })
  const env = { ...process.env, HOME: home }
  const bus = spawn('dbus-daemon', ['--session', '--nofork', '--print-address=1'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const address = (await readLine(bus, 'stdout', /^(unix:\S+)/m, 'dbus-daemon')).trim()
  const keyring = spawn('gnome-keyring-daemon', ['--foreground', '--unlock', '--components=secrets'], {
    env: { ...env, DBUS_SESSION_BUS_ADDRESS: address },
    stdio: ['pipe', 'pipe', 'pipe']
  })
  keyring.stdin.end('pw\n')
  // Until the daemon owns the bus name, a secret-tool call would D-Bus-activate a second, locked daemon.
  await readLine(keyring, 'stdout', /GNOME_KEYRING_CONTROL=\S+/, 'gnome-keyring-daemon')
  await untilKeyringAnswers(address, keyring)
  return {
    address,
    async stop() {
      await stopChild(keyring)
      await stopChild(bus)
      await rm(home, { recursive: true, force: true })
    }
  }
}
