import { readFile } from 'node:fs/promises'
import { basename, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { z } from 'zod'
import { diagnoseRecording } from '../doctor/doctor'
import { formatDoctorReport } from '../doctor/format'
import { RecordingInputError } from '../doctor/input'
import { redactRecording } from '../doctor/redact'
import { startTap } from '../doctor/tap'
import { writeAtomically } from '../fs/atomic-write'
import { DEFAULT_MAX_CONNECTIONS } from '../net/connection-limit'
import { stdio, type Output } from './output'

export const DOCTOR_USAGE = `syncscope doctor <file.har|recording.json> [options]   diagnose a recorded sync (a browser HAR, a tap's HAR, a Syncscope recording)
  --json             print the report as JSON
  --redact FILE      also write the file with tokens, cookies and secrets masked (a bundle for a bug report)
  exit code 0 when nothing is wrong, 1 when a diagnosis is an error, 2 when the file cannot be read`

export const TAP_USAGE = `syncscope tap --upstream URL [options]   a recording proxy: point your app at it instead of the shape service
  --upstream URL     the shape service (or proxy) to forward to, e.g. http://127.0.0.1:3000
  --port N           port to listen on; default 3100, 0 picks a free one
  --host H           address to bind; default 127.0.0.1
  --out FILE         the HAR file written after every exchange; default syncscope-tap.har
  --max-connections N  open connections served at once, more are answered 503; default ${DEFAULT_MAX_CONNECTIONS}`

/** `syncscope doctor <file>`: the timeline and the diagnoses of a recorded sync. */
export async function doctorMain(argv: string[], io: Output = stdio): Promise<number> {
  const usage = (message: string) => {
    io.err(`syncscope doctor: ${message}\n\nusage:\n  ${DOCTOR_USAGE}\n`)
    return 2
  }
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: true,
      options: { json: { type: 'boolean' }, redact: { type: 'string' }, help: { type: 'boolean', short: 'h' } }
    })
  } catch (error) {
    return usage((error as Error).message)
  }
  if (parsed.values.help) {
    io.out(`usage:\n  ${DOCTOR_USAGE}\n`)
    return 0
  }
  if (parsed.positionals.length !== 1)
    return usage(
      parsed.positionals.length === 0
        ? 'name the HAR file or recording to read'
        : `one file, not ${parsed.positionals.length}`
    )
  const file = resolve(parsed.positionals[0]!)
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    const { code } = error as NodeJS.ErrnoException
    io.err(
      `syncscope doctor: cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a folder' : (error as Error).message}\n`
    )
    return 2
  }
  try {
    const report = diagnoseRecording(basename(file), text)
    if (parsed.values.redact) await writeAtomically(resolve(parsed.values.redact), redactRecording(text), 0o600)
    io.out(parsed.values.json ? `${JSON.stringify(report, null, 2)}\n` : formatDoctorReport(report))
    return report.findings.some((finding) => finding.severity === 'error') ? 1 : 0
  } catch (error) {
    if (error instanceof RecordingInputError) {
      io.err(`syncscope doctor: ${file}: ${error.message}\n`)
      return 2
    }
    throw error
  }
}

const TapOptionsSchema = z.object({
  upstream: z
    .string({ error: '--upstream is required: the shape service to forward to' })
    .url('--upstream must be an http(s) URL')
    .refine((url) => /^https?:$/.test(new URL(url).protocol), '--upstream must be an http(s) URL'),
  port: z.coerce
    .number({ error: '--port must be a number' })
    .int('--port must be a whole number')
    .min(0, '--port must be 0…65535')
    .max(65535, '--port must be 0…65535')
    .default(3100),
  host: z.string().min(1).default('127.0.0.1'),
  out: z.string().min(1).default('syncscope-tap.har'),
  maxConnections: z.coerce
    .number({ error: '--max-connections must be a number' })
    .int('--max-connections must be a whole number')
    .min(1, '--max-connections must be at least 1')
    .default(DEFAULT_MAX_CONNECTIONS)
})

/** `syncscope tap`: records every exchange between an app and its shape service into a HAR, until Ctrl+C. */
export async function tapMain(argv: string[], io: Output = stdio): Promise<number> {
  const usage = (message: string) => {
    io.err(`syncscope tap: ${message}\n\nusage:\n  ${TAP_USAGE}\n`)
    return 2
  }
  let values
  try {
    values = parseArgs({
      args: argv,
      strict: true,
      options: {
        upstream: { type: 'string' },
        port: { type: 'string' },
        host: { type: 'string' },
        out: { type: 'string' },
        'max-connections': { type: 'string' },
        help: { type: 'boolean', short: 'h' }
      }
    }).values
  } catch (error) {
    return usage((error as Error).message)
  }
  if (values.help) {
    io.out(`usage:\n  ${TAP_USAGE}\n`)
    return 0
  }
  const options = TapOptionsSchema.safeParse({ ...values, maxConnections: values['max-connections'] })
  if (!options.success) return usage(options.error.issues.map((issue) => issue.message).join('\n'))
  const out = resolve(options.data.out)
  const tap = await startTap({ ...options.data, out, log: (line) => io.err(`${line}\n`) })
  io.out(
    `Tap           ${tap.url}  →  ${options.data.upstream}\nRecording to  ${out}  (read it with \`syncscope doctor ${options.data.out}\`)\nPress Ctrl+C to stop.\n`
  )
  await new Promise<void>((done) => {
    const stop = () => {
      tap.close().then(done, done)
    }
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
  })
  io.out(`${tap.entries.length} exchanges recorded in ${out}\n`)
  return 0
}
