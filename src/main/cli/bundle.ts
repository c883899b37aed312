import { resolve } from 'node:path'
import { writeAtomically } from '../fs/atomic-write'
import { MAX_BUNDLE_CHARS, openBundle, writeBundle } from '../timetravel/bundle'
import { logLine } from '../timetravel/format'
import { readOnly, readShapeRows, resolveShape } from '../timetravel/postgres'
import { openShapeUrl, readInputFile } from '../timetravel/source'
import { RecordingInputError } from '../doctor/input'
import { TimeTravelInputError } from '../timetravel/log'
import { stdio, type Output } from './output'
import { LOG_OPTIONS_USAGE, commandLine, databaseUrlProblem, openOptions, runCommand } from './timetravel-options'

export const BUNDLE_USAGE = `syncscope bundle export <shape-url> --out FILE [options]   one file to attach to a bug report
  --recording FILE   a client's recording to include (a workbench session, a HAR, a tap's HAR)
  --database URL     include the rows Postgres holds for the shape now
  Holds the shape's definition, its whole log (the local server's files, or followed over HTTP) and what is given,
  tokens, cookies and secrets masked as \`syncscope doctor --redact\` masks them. Open it with the commands that take
  a shape URL (\`shape at\`, \`txid --shape\`) or with \`verify\`, on any machine, read-only.
syncscope bundle open FILE [--json]    what a bundle holds
${LOG_OPTIONS_USAGE}
  exit code 0, or 2 when the input cannot be used`

/** `syncscope bundle export|open`: repro bundles. */
export async function bundleMain(argv: string[], io: Output = stdio): Promise<number> {
  const line = commandLine(
    'bundle',
    BUNDLE_USAGE,
    argv,
    { out: { type: 'string' }, recording: { type: 'string' }, database: { type: 'string' } },
    io
  )
  if (typeof line === 'number') return line
  const { parsed, usage } = line
  const { values, positionals } = parsed
  const [command, target, ...rest] = positionals
  if (command !== 'export' && command !== 'open') return usage('say `export` or `open`')
  if (!target) return usage(command === 'export' ? 'name the shape URL' : 'name the bundle file')
  if (rest.length > 0) return usage('one shape or file')
  if (command === 'open')
    return runCommand('bundle', io, async () => {
      const { name, text } = await readInputFile(target, MAX_BUNDLE_CHARS)
      const bundle = openBundle(name, text)
      const { records, ...log } = bundle.log
      if (values.json)
        io.out(`${JSON.stringify({ ...bundle.summary, log: { ...log, total: records.length } }, null, 2)}\n`)
      else io.out(describeBundle(bundle))
      return 0
    })
  if (!values.out) return usage('--out FILE is required')
  const problem = values.database === undefined ? null : databaseUrlProblem(values.database)
  if (problem) return usage(problem)
  const options = openOptions(values)
  if (typeof options === 'string') return usage(options)
  const out = resolve(values.out)
  return runCommand('bundle', io, async () => {
    const recording = values.recording ? await readInputFile(values.recording, MAX_BUNDLE_CHARS) : null
    const log = await openShapeUrl(target, options)
    const database = values.database
    const rows = database
      ? await readOnly(database, async (client) => readShapeRows(client, await resolveShape(client, log.definition)))
      : null
    let text: string
    try {
      text = writeBundle(log, recording, rows, 'syncscope bundle export')
    } catch (error) {
      if (error instanceof RecordingInputError) throw new TimeTravelInputError(`${recording?.name}: ${error.message}`)
      throw error
    }
    await writeAtomically(out, text, 0o600)
    io.out(
      `${logLine(log)}\nBundle        ${out}  (${log.records.length} messages${recording ? `, ${recording.name}` : ''}${rows ? `, ${rows.rows.size} Postgres row(s)` : ''}; secrets masked)\n`
    )
    return 0
  })
}

function describeBundle(bundle: ReturnType<typeof openBundle>): string {
  const { summary, log } = bundle
  const lines = [
    `${summary.name}: made ${summary.createdAt} by ${summary.createdBy}`,
    `  log:       ${logLine(log)}`,
    `  messages:  ${log.records.length}`,
    `  recording: ${summary.recording ? `${summary.recording.kind}, ${summary.recording.exchanges} exchanges` : 'none'}`,
    `  Postgres:  ${summary.postgres ? `${summary.postgres.rows} rows read ${summary.postgres.readAt}` : 'not included'}`,
    ...log.notes.map((note) => `  note: ${note}`)
  ]
  return `${lines.join('\n')}\n`
}
