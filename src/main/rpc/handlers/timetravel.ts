import { RpcError } from '../../../shared/contract/errors'
import type { LogSourceInput, timetravelCalls } from '../../../shared/contract/timetravel'
import type { Core } from '../../core'
import { openBundle, writeBundle } from '../../timetravel/bundle'
import { findShapeFolder, listShapeFolders, readShapeFolder } from '../../timetravel/local-files'
import { TimeTravelInputError, entryOf, type ReadLog } from '../../timetravel/log'
import { OpenedLogs, infoOf } from '../../timetravel/opened-logs'
import { readOnly, readShapeRows, resolveShape } from '../../timetravel/postgres'
import { diffBetween, rowsAt } from '../../timetravel/replay'
import { receivedLog } from '../../timetravel/recording-log'
import { openShapeUrl } from '../../timetravel/source'
import { traceTxid } from '../../timetravel/txid'
import { readInput, verifyInput } from '../../timetravel/verify'
import type { HandlersFor } from '../dispatcher'

const pairs = (list: ReadonlyArray<{ name: string; value: string }>) =>
  Object.fromEntries(list.map(({ name, value }) => [name, value]))

/** Input the time-travel calls cannot use is the caller's problem: 400 with the one line that names it. */
async function usable<T>(task: () => Promise<T>): Promise<T> {
  try {
    return await task()
  } catch (error) {
    if (error instanceof TimeTravelInputError) throw new RpcError('timetravel_input', error.message)
    throw error
  }
}

export function timetravelHandlers(core: Core): HandlersFor<typeof timetravelCalls> {
  const opened = new OpenedLogs()
  const dataDir = core.options.dataDir

  async function read(source: LogSourceInput): Promise<ReadLog> {
    if (source.kind === 'opened') return opened.get(source.logId).log
    if (source.kind === 'recording') return receivedLog(source.recording.name, source.recording.text)
    if (source.kind === 'url')
      return openShapeUrl(source.url, { dataDir, params: pairs(source.params), headers: pairs(source.headers) })
    const dir = findShapeFolder(dataDir, source.handle)
    if (!dir)
      throw new TimeTravelInputError(
        `the app's shape server has no shape ${source.handle} (dropped, or never made here)`
      )
    return readShapeFolder(dir)
  }

  /** An opened bundle's shapes have no database of this machine behind them: only a URL given explicitly is read. */
  const databaseFor = (given: string | null, bundle: boolean): string | null =>
    given ?? (bundle ? null : core.database().url)

  return {
    'timetravel.open': ({ source }) =>
      usable(async () =>
        source.kind === 'opened'
          ? infoOf(source.logId, opened.get(source.logId).log)
          : opened.add({ log: await read(source), bundle: null })
      ),
    'timetravel.openBundle': ({ name, text }) =>
      usable(async () => {
        const bundle = openBundle(name, text)
        return { ...opened.add({ log: bundle.log, bundle }), bundle: bundle.summary }
      }),
    'timetravel.close': async ({ logId }) => ({ closed: opened.close(logId) }),
    'timetravel.rowsAt': ({ logId, at, start, limit }) =>
      usable(async () => {
        const { log, cursor } = opened.get(logId)
        return rowsAt(log, at, { start, limit, cursor })
      }),
    'timetravel.diff': ({ logId, from, to, limit }) =>
      usable(async () => diffBetween(opened.get(logId).log, from, to, limit)),
    'timetravel.messages': ({ logId, from, count }) =>
      usable(async () => ({
        entries: opened
          .get(logId)
          .log.records.slice(from, from + count)
          .map((record, at) => ({ entry: entryOf(record, from + at), message: record.message }))
      })),
    'timetravel.verify': ({ recording, bundleLogId, databaseUrl }) =>
      usable(async () => {
        const bundle = bundleLogId ? opened.get(bundleLogId).bundle : null
        if (bundleLogId && !bundle)
          throw new TimeTravelInputError('that log is not a bundle: give the recording to verify')
        const given = recording ? readInput(recording.name, recording.text) : null
        const input = given?.input ?? bundle?.recording?.input
        if (!input) throw new TimeTravelInputError('give a recording to verify (or a bundle that holds one)')
        const name = recording?.name ?? bundle?.summary.name ?? 'recording'
        return verifyInput(name, input, given?.bundle ?? bundle, {
          databaseUrl: databaseFor(databaseUrl, Boolean(given?.bundle ?? bundle)),
          dataDir
        })
      }),
    'timetravel.txid': ({ txid, shapes, allLocal, databaseUrl }) =>
      usable(async () => {
        const logs: ReadLog[] = []
        for (const source of shapes) logs.push(await read(source))
        if (allLocal) for (const folder of await listShapeFolders(dataDir)) logs.push(await readShapeFolder(folder))
        if (logs.length === 0) throw new TimeTravelInputError('name the shapes to search, or all the local ones')
        return traceTxid(
          txid,
          logs,
          databaseFor(
            databaseUrl,
            logs.some((log) => log.source.kind === 'bundle')
          )
        )
      }),
    'timetravel.exportBundle': ({ logId, recording, databaseUrl, readPostgres }) =>
      usable(async () => {
        const { log } = opened.get(logId)
        const url = readPostgres ? databaseFor(databaseUrl, log.source.kind === 'bundle') : null
        const rows = url
          ? await readOnly(url, async (client) => readShapeRows(client, await resolveShape(client, log.definition)))
          : null
        const text = writeBundle(log, recording ?? null, rows, 'Syncscope')
        const name = `${log.definition.table.replace(/[^\w.-]+/g, '_')}-${log.handle ?? 'shape'}.syncscope-bundle.json`
        return { name, text }
      })
  }
}
