import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'

interface LaunchedClient {
  stdout(text: string): void
  exit(code: number | null): void
}

/** bench/client-launcher.mjs, which starts the client scripts so that this process never forks while it serves. */
class ClientLauncher {
  private readonly process: ChildProcess
  private readonly clients = new Map<number, LaunchedClient>()
  private nextId = 0

  constructor() {
    this.process = spawn(process.execPath, [join(__dirname, 'client-launcher.mjs')], {
      stdio: ['pipe', 'pipe', 'inherit']
    })
    this.process.unref()
    createInterface({ input: this.process.stdout! }).on('line', (line) => this.receive(line))
  }

  private receive(line: string): void {
    const message = JSON.parse(line) as { id: number; stdout?: string; exit?: number | null }
    const client = this.clients.get(message.id)
    if (message.stdout !== undefined) client?.stdout(message.stdout)
    if (message.exit !== undefined) {
      this.clients.delete(message.id)
      client?.exit(message.exit)
    }
  }

  private command(message: object): void {
    this.process.stdin!.write(`${JSON.stringify(message)}\n`)
  }

  launch(argv: string[], client: LaunchedClient): (text: string) => void {
    const id = this.nextId++
    this.clients.set(id, client)
    this.command({ id, argv })
    return (text) => this.command({ id, stdin: text })
  }

  /** Lets this process exit: the launcher ends with its stdin, after its clients. */
  close(): void {
    this.process.stdin!.end()
    ;(this.process.stdout as { unref?: () => void } | null)?.unref?.()
  }
}

let launcher: ClientLauncher | null = null

/** Starts the launcher; call it first, while this process is small (a fork costs it a fault per page it then writes). */
export function startClientLauncher(): void {
  launcher ??= new ClientLauncher()
}

/** Ends the launcher once its clients have exited. */
export function stopClientLauncher(): void {
  launcher?.close()
  launcher = null
}

export interface ClientProcess {
  ready: Promise<void>
  lines: Promise<unknown[]>
  /** The next JSON line it prints after `ready` (each line goes to one call, in order); rejects if it exits first. */
  nextLine(): Promise<unknown>
  send(text: string): void
}

/**
 * A bench client script (under bench/) in its own process, so its socket work does not share the server's event loop:
 * `ready` once it printed `{"ready":true}`, `lines` the JSON lines it printed, once it exited; `send` writes to its stdin.
 */
export function clientProcess(script: string, args: string[]): ClientProcess {
  return launchClient([process.execPath, join(__dirname, script), ...args])
}

export interface ClientProgram {
  /** Which client it is, for the report. */
  name: string
  start(args: string[]): ClientProcess
}

const builtClients = new Map<string, Promise<string | null>>()
let buildDirectory: string | null = null

/**
 * A bench client with a twin in C (`bench/<name>.c`, built once per run with the machine's `cc -O2`): one socket read
 * costs it a few microseconds where the Node client (`<name>.mjs`) spends ten or more, and on two cores the clients
 * compete with the server, so their own cost is part of what they measure. The Node client where there is no
 * compiler, or with BENCH_CLIENTS=node.
 */
export async function benchClient(name: string): Promise<ClientProgram> {
  if (process.env.BENCH_CLIENTS === 'node') return nodeClient(name)
  if (!builtClients.has(name)) builtClients.set(name, build(name))
  const binary = await builtClients.get(name)!
  return binary ? { name: `C (bench/${name}.c)`, start: (args) => launchClient([binary, ...args]) } : nodeClient(name)
}

/** The Node client `bench/<name>.mjs`. */
export function nodeClient(name: string): ClientProgram {
  return { name: `Node (bench/${name}.mjs)`, start: (args) => clientProcess(`${name}.mjs`, args) }
}

/** Builds bench/<name>.c into this run's directory (removed at exit); null where it cannot. */
async function build(name: string): Promise<string | null> {
  if (!buildDirectory) {
    const directory = mkdtempSync(join(tmpdir(), 'syncscope-bench-clients-'))
    process.once('exit', () => rmSync(directory, { recursive: true, force: true }))
    buildDirectory = directory
  }
  const binary = join(buildDirectory, name)
  // built by the launcher too: a fork of this process costs it a fault per page it writes afterwards
  const compiler = launchClient(['cc', '-O2', '-o', binary, join(__dirname, `${name}.c`)])
  return compiler.lines.then(
    () => binary,
    () => null
  )
}

/** Like clientProcess, for any program (`argv[0]`). */
export function launchClient(argv: string[]): ClientProcess {
  startClientLauncher()
  const name = argv[argv[0] === process.execPath ? 1 : 0]
  let markReady: () => void = () => undefined
  let markExited: (code: number | null) => void = () => undefined
  const ready = new Promise<void>((resolve) => (markReady = resolve))
  const exited = new Promise<number | null>((resolve) => (markExited = resolve))
  const output = new ClientOutput()
  const send = launcher!.launch(argv, {
    stdout(text) {
      output.add(text)
      if (output.text.includes('"ready"')) markReady()
    },
    exit(code) {
      output.end(new Error(`${name} exited with ${code}`))
      markExited(code)
    }
  })
  const lines = exited.then((code) => {
    if (code !== 0) throw new Error(`${name} exited with ${code}`)
    return output.text
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as unknown)
  })
  return { ready, lines, nextLine: () => output.nextLine(), send }
}

/**
 * What a client printed; its JSON lines (but its `{"ready":true}`) handed out one at a time. Lines are only split and
 * parsed while a caller waits for one: the clients print while the server in this process is being measured.
 */
class ClientOutput {
  text = ''
  private taken = 0
  private readonly waiting: Array<{ resolve(line: unknown): void; reject(error: Error): void }> = []
  private ended: Error | null = null

  add(text: string): void {
    this.text += text
    if (this.waiting.length > 0) this.handOut()
  }

  end(error: Error): void {
    this.ended = error
    this.handOut()
  }

  nextLine(): Promise<unknown> {
    const line = new Promise<unknown>((resolve, reject) => this.waiting.push({ resolve, reject }))
    this.handOut()
    return line
  }

  private handOut(): void {
    while (this.waiting.length > 0) {
      const end = this.text.indexOf('\n', this.taken)
      if (end === -1) {
        if (this.ended) for (const waiter of this.waiting.splice(0)) waiter.reject(this.ended)
        return
      }
      const text = this.text.slice(this.taken, end)
      this.taken = end + 1
      if (text.trim() === '') continue
      const waiter = this.waiting[0]!
      try {
        const line = JSON.parse(text) as { ready?: unknown }
        if (line.ready === true) continue
        this.waiting.shift()
        waiter.resolve(line)
      } catch (error) {
        this.waiting.shift()
        waiter.reject(error as Error)
      }
    }
  }
}
