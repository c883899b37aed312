import { watch, type FSWatcher } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { basename, dirname } from 'node:path'
import { writeAtomically } from '../fs/atomic-write'
import { parseProxyConfig, ProxyConfigError, type ConfigIssue, type LoadedConfig } from './config'

export interface ConfigFileStatus {
  path: string
  /** When the config now in force was read. */
  loadedAt: string
  /** The last reload that failed; the previous config stayed in force. Null once a good file is read. */
  error: { message: string; issues: ConfigIssue[]; at: string } | null
}

async function readConfig(path: string): Promise<{ text: string; loaded: LoadedConfig }> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    throw new ProxyConfigError([{ path: [], message: `cannot read ${path}: ${(error as Error).message}` }])
  }
  return { text, loaded: await parseProxyConfig(text, { dir: dirname(path) }) }
}

/**
 * The proxy config file, hot-reloaded: a change on disk that parses replaces the config in force; one that does
 * not is reported and the previous config stays.
 */
export class ProxyConfigFile {
  private watcher: FSWatcher | null = null
  private timer: NodeJS.Timeout | null = null
  private reloading: Promise<void> = Promise.resolve()
  private lastError: ConfigFileStatus['error'] = null

  private constructor(
    readonly path: string,
    private current: { text: string; loaded: LoadedConfig; at: string },
    private readonly onChange: (loaded: LoadedConfig) => void,
    private readonly log: (line: string) => void,
    private readonly onRejected: () => void
  ) {}

  /** Reads the file (throwing ProxyConfigError when it is bad) and starts watching it. */
  static async open(
    path: string,
    onChange: (loaded: LoadedConfig) => void,
    log: (line: string) => void,
    onRejected: () => void
  ): Promise<ProxyConfigFile> {
    const first = await readConfig(path)
    const file = new ProxyConfigFile(path, { ...first, at: new Date().toISOString() }, onChange, log, onRejected)
    file.watch()
    return file
  }

  get loaded(): LoadedConfig {
    return this.current.loaded
  }

  get text(): string {
    return this.current.text
  }

  status(): ConfigFileStatus {
    return { path: this.path, loadedAt: this.current.at, error: this.lastError }
  }

  /** Watches the folder: editors and atomic writes replace the file, which a watch on the file itself would lose. */
  private watch(): void {
    this.watcher = watch(dirname(this.path), (_event, name) => {
      if (name !== null && name !== basename(this.path)) return
      if (this.timer) clearTimeout(this.timer)
      this.timer = setTimeout(() => void this.reload(), 50)
    })
    this.watcher.on('error', (error) => this.log(`proxy config: watching ${this.path} failed: ${error.message}`))
  }

  /** Re-reads the file now; resolves when the outcome is in force. */
  reload(): Promise<void> {
    this.reloading = this.reloading.then(() => this.readAndApply())
    return this.reloading
  }

  private async readAndApply(): Promise<void> {
    try {
      const next = await readConfig(this.path)
      if (next.text === this.current.text && this.lastError === null) return
      this.apply(next.text, next.loaded)
    } catch (error) {
      if (!(error instanceof ProxyConfigError)) throw error
      this.lastError = { message: error.message, issues: error.issues, at: new Date().toISOString() }
      this.log(`proxy config ${this.path} not reloaded, the previous config stays in force:\n${error.message}`)
      this.onRejected()
    }
  }

  private apply(text: string, loaded: LoadedConfig): void {
    this.current = { text, loaded, at: new Date().toISOString() }
    this.lastError = null
    this.onChange(loaded)
  }

  /** Checks `text` and, if it is a good config, writes it and puts it in force; throws ProxyConfigError otherwise. */
  async save(text: string): Promise<void> {
    const loaded = await parseProxyConfig(text, { dir: dirname(this.path) })
    await writeAtomically(this.path, text)
    this.apply(text, loaded)
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer)
    this.watcher?.close()
  }
}
