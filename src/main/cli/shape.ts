import { formatDiff, formatLog, formatRowsAt } from '../timetravel/format'
import { checkOffset, entryOf } from '../timetravel/log'
import { diffBetween, rowsAt } from '../timetravel/replay'
import { openSpec } from '../timetravel/source'
import { stdio, type Output } from './output'
import { LOG_OPTIONS_USAGE, commandLine, openOptions, runCommand } from './timetravel-options'
import { laterOffset } from '../../shared/shape-client/offsets'

export const SHAPE_USAGE = `syncscope shape at <shape-url|bundle> --offset O [options]   the shape's rows at offset O of its log, each row with
                                                             the messages that made it (tags and move-in/out applied)
syncscope shape at <shape-url|bundle> --from O1 --to O2     what changed between two offsets (also: shape diff)
syncscope shape log <shape-url|bundle> [options]            the log's messages with their offsets
  <shape-url>        e.g. 'http://127.0.0.1:3000/v1/shape?table=issues&where=id>10' (offset and live parameters are
                     ignored; a handle picks that log); the local server's log is read from its files, any other
                     service's followed from -1 as a client would. <bundle>: a file \`syncscope bundle export\` wrote.
  --offset O         -1 (before everything), 0_<k> (after snapshot chunk k), 0_inf, <lsn>_<op>
  --limit N          rows or messages printed (default 200; --json prints all)
${LOG_OPTIONS_USAGE}
  exit code 0, or 2 when the input cannot be used (bad URL or file, an offset outside the log)`

/** `syncscope shape at|diff|log`: time travel through a shape's log. */
export async function shapeMain(argv: string[], io: Output = stdio): Promise<number> {
  const line = commandLine(
    'shape',
    SHAPE_USAGE,
    argv,
    { offset: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' }, limit: { type: 'string' } },
    io
  )
  if (typeof line === 'number') return line
  const { parsed, usage } = line
  const { values, positionals } = parsed
  const [command, spec, ...rest] = positionals
  if (command !== 'at' && command !== 'diff' && command !== 'log') return usage('say `at`, `diff` or `log`')
  if (!spec) return usage('name the shape URL or bundle')
  if (rest.length > 0) return usage(`one shape, not ${rest.length + 1}`)
  const options = openOptions(values)
  if (typeof options === 'string') return usage(options)
  const limit = values.limit === undefined ? 200 : Number(values.limit)
  if (!Number.isSafeInteger(limit) || limit < 1) return usage('--limit must be a whole number of at least 1')
  const diff = command === 'diff' || values.from !== undefined || values.to !== undefined
  if (diff && (values.from === undefined || values.to === undefined)) return usage('a diff needs --from and --to')
  if (command === 'at' && !diff && values.offset === undefined)
    return usage('--offset is required: -1, 0_0, 0_inf, <lsn>_<op>')
  return runCommand('shape', io, async () => {
    const points = [values.offset, values.from, values.to].filter((point): point is string => point !== undefined)
    const until = command === 'log' ? null : points.map(checkOffset).reduce(laterOffset)
    const log = await openSpec(spec, { ...options, until })
    const shown = values.json ? Infinity : limit
    if (diff) {
      const result = diffBetween(log, { offset: values.from as string }, { offset: values.to as string }, shown)
      io.out(values.json ? `${JSON.stringify({ log: header(log), diff: result }, null, 2)}\n` : formatDiff(log, result))
    } else if (command === 'at') {
      const result = rowsAt(log, { offset: values.offset as string }, { limit: shown })
      io.out(values.json ? `${JSON.stringify({ log: header(log), at: result }, null, 2)}\n` : formatRowsAt(log, result))
    } else {
      const entries = log.records.slice(0, shown).map(entryOf)
      io.out(values.json ? `${JSON.stringify({ log: header(log), entries }, null, 2)}\n` : formatLog(log, entries))
    }
    return 0
  })
}

const header = (log: Awaited<ReturnType<typeof openSpec>>) => {
  const { records, ...rest } = log
  return { ...rest, total: records.length }
}
