import { formatTxid } from '../timetravel/format'
import { MAX_LOCAL_SHAPES, listShapeFolders, readShapeFolder } from '../timetravel/local-files'
import { TimeTravelInputError } from '../timetravel/log'
import { openSpec } from '../timetravel/source'
import { parseTxid, traceTxid } from '../timetravel/txid'
import { stdio, type Output } from './output'
import { LOG_OPTIONS_USAGE, commandLine, databaseUrlProblem, openOptions, runCommand } from './timetravel-options'

export const TXID_USAGE = `syncscope txid <n> --shape <shape-url|bundle> [--shape …] [options]   where a write's transaction went
  <n>                the transaction id as pg_current_xact_id() returned it to the write (what awaitTxId waits for)
  --shape URL        a shape whose log to search (repeatable): the messages carrying it in txids, or the snapshot
                     (xmin/xmax/xip_list) that already covers it
  --all-local        every shape of the local server's data folder (--data-dir), at most ${MAX_LOCAL_SHAPES}
  --database URL     the Postgres the shape service follows: tells why an id is absent (rolled back, the write did
                     not match the where, the id was taken outside the write's transaction…)
${LOG_OPTIONS_USAGE}
  exit code 0 when a shape carries or covers it, 1 when none does, 2 when the input cannot be used (an id the
  database never gave, a shape that cannot be read)`

/** `syncscope txid`: did my write reach the shape? */
export async function txidMain(argv: string[], io: Output = stdio): Promise<number> {
  const line = commandLine(
    'txid',
    TXID_USAGE,
    argv,
    { shape: { type: 'string', multiple: true }, 'all-local': { type: 'boolean' }, database: { type: 'string' } },
    io
  )
  if (typeof line === 'number') return line
  const { parsed, usage } = line
  const { values, positionals } = parsed
  if (positionals.length !== 1)
    return usage(positionals.length === 0 ? 'give the transaction id' : 'one transaction id')
  const shapes = values.shape ?? []
  if (shapes.length === 0 && !values['all-local']) return usage('name at least one --shape, or --all-local')
  if (shapes.length > 20) return usage('at most 20 --shape')
  const problem = values.database === undefined ? null : databaseUrlProblem(values.database)
  if (problem) return usage(problem)
  const options = openOptions(values)
  if (typeof options === 'string') return usage(options)
  return runCommand('txid', io, async () => {
    parseTxid(positionals[0] as string)
    const logs = []
    for (const shape of shapes) logs.push(await openSpec(shape, options))
    if (values['all-local'] && options.dataDir) {
      const folders = await listShapeFolders(options.dataDir)
      if (folders.length === 0) throw new TimeTravelInputError(`${options.dataDir} holds no shape`)
      for (const folder of folders) logs.push(await readShapeFolder(folder))
    }
    const report = await traceTxid(positionals[0] as string, logs, values.database ?? null)
    io.out(values.json ? `${JSON.stringify(report, null, 2)}\n` : formatTxid(report))
    return report.verdict === 'delivered' ? 0 : 1
  })
}
