import { readFile, stat } from 'node:fs/promises'
import { basename, resolve } from 'node:path'
import { MAX_BUNDLE_CHARS, isBundleText, openBundle } from './bundle'
import { SnapshotUnfinishedError, findShapeFolder, readShapeFolder } from './local-files'
import { followOverHttp } from './follow-http'
import { TimeTravelInputError, type ReadLog } from './log'
import { displayUrl, parseShapeUrl } from './shape-url'

export interface OpenOptions {
  /** The local shape server's data folder: its files are read instead of following the log over HTTP. */
  dataDir: string | null
  /** Follow over HTTP even when the files are at hand. */
  overHttp?: boolean
  /** Parameters and headers sent with every request (a secret, a proxy's token). */
  params?: Record<string, string>
  headers?: Record<string, string>
  /** Over HTTP: stop once the log is read past this offset. */
  until?: string | null
  fetch?: typeof fetch
}

/** The server that answered is this app's shape server (`<brand>-server: Syncscope/…`). */
const isSyncscope = (server: string | null): boolean => server?.startsWith('Syncscope/') === true

/**
 * A shape's log from its URL. The local server's files are read directly (found by the URL's `handle`, or by the
 * handle its first answer names, in `dataDir`); any other service's log is followed from `-1` as a client would.
 */
export async function openShapeUrl(text: string, options: OpenOptions): Promise<ReadLog> {
  const target = parseShapeUrl(text, { params: options.params, headers: options.headers })
  const { dataDir } = options
  const local = async (dir: string, server: string | null): Promise<ReadLog> => {
    try {
      return { ...(await readShapeFolder(dir)), url: displayUrl(target), server }
    } catch (error) {
      if (!(error instanceof SnapshotUnfinishedError)) throw error
      const log = await followOverHttp(target, { until: options.until, fetch: options.fetch })
      if (!log) throw error
      log.notes.unshift(`${error.message}: its log was followed over HTTP`)
      return log
    }
  }
  const named = target.handle && dataDir && !options.overHttp ? findShapeFolder(dataDir, target.handle) : null
  if (named) return local(named, null)
  let folder: { dir: string; server: string } | null = null
  let elsewhere: string | null = null
  const followed = await followOverHttp(target, {
    until: options.until,
    fetch: options.fetch,
    onFirstResponse: (handle, server) => {
      if (options.overHttp || !dataDir || !handle || !server || !isSyncscope(server)) return false
      const dir = findShapeFolder(dataDir, handle)
      if (dir) folder = { dir, server }
      else
        elsewhere = `this is a Syncscope shape server, but shape ${handle} is not in ${dataDir}: its log was followed over HTTP (give the server's data folder with --data-dir to read its files)`
      return dir !== null
    }
  })
  if (folder) {
    const { dir, server } = folder as { dir: string; server: string }
    return local(dir, server)
  }
  if (!followed) throw new TimeTravelInputError(`${displayUrl(target)}: no answer`)
  if (elsewhere) followed.notes.unshift(elsewhere)
  return followed
}

/** A shape URL, or a bundle file: its log. */
export async function openSpec(spec: string, options: OpenOptions): Promise<ReadLog> {
  if (/^https?:\/\//i.test(spec)) return openShapeUrl(spec, options)
  const { name, text } = await readInputFile(spec, MAX_BUNDLE_CHARS)
  if (!isBundleText(text))
    throw new TimeTravelInputError(`${name} is neither a shape URL (http://…/v1/shape?table=…) nor a Syncscope bundle`)
  return openBundle(name, text).log
}

/** A file named on the command line, at most `maxBytes`: TimeTravelInputError when it cannot be read. */
export async function readInputFile(path: string, maxBytes: number): Promise<{ name: string; text: string }> {
  const file = resolve(path)
  try {
    const info = await stat(file)
    if (info.isDirectory()) throw new TimeTravelInputError(`${file} is a folder`)
    if (info.size > maxBytes) throw new TimeTravelInputError(`${file} is larger than ${maxBytes} bytes`)
    return { name: basename(file), text: await readFile(file, 'utf8') }
  } catch (error) {
    if (error instanceof TimeTravelInputError) throw error
    const { code } = error as NodeJS.ErrnoException
    throw new TimeTravelInputError(
      `cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : (error as Error).message}`
    )
  }
}
