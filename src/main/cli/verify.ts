import { MAX_BUNDLE_CHARS } from '../timetravel/bundle'
import { formatVerify } from '../timetravel/format'
import { readInputFile } from '../timetravel/source'
import { verifyRecording } from '../timetravel/verify'
import { stdio, type Output } from './output'
import { LOG_OPTIONS_USAGE, commandLine, databaseUrlProblem, openOptions, runCommand } from './timetravel-options'

export const VERIFY_USAGE = `syncscope verify <recording|har|bundle> --database URL [options]   a client's rows against Postgres
  <recording>        a workbench session saved as a Syncscope recording, a browser's HAR, a \`syncscope tap\` HAR, or a
                     bundle (\`syncscope bundle export\`), whose rows stand in for --database
  --database URL     the Postgres the shape service follows: its rows for the shape now
                     The client's messages are also compared with the server's log up to where the client was: the
                     local server's files, a bundle's log, or the service's log followed again (same handle).
${LOG_OPTIONS_USAGE}
  exit code 0 when the client holds what Postgres holds, 1 on a divergence (a message dropped, duplicated,
  reordered…, or a row that differs), 2 when the input cannot be read`

/** `syncscope verify`: is a client's data the database's? */
export async function verifyMain(argv: string[], io: Output = stdio): Promise<number> {
  const line = commandLine('verify', VERIFY_USAGE, argv, { database: { type: 'string' } }, io)
  if (typeof line === 'number') return line
  const { parsed, usage } = line
  const { values, positionals } = parsed
  if (positionals.length !== 1)
    return usage(positionals.length === 0 ? 'name the recording, HAR or bundle' : `one file, not ${positionals.length}`)
  const problem = values.database === undefined ? null : databaseUrlProblem(values.database)
  if (problem) return usage(problem)
  const options = openOptions(values)
  if (typeof options === 'string') return usage(options)
  return runCommand('verify', io, async () => {
    const { name, text } = await readInputFile(positionals[0] as string, MAX_BUNDLE_CHARS)
    const report = await verifyRecording(name, text, { ...options, databaseUrl: values.database ?? null })
    io.out(values.json ? `${JSON.stringify(report, null, 2)}\n` : formatVerify(report))
    return report.verdict === 'equal' ? 0 : 1
  })
}
