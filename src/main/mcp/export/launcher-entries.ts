import { createHash } from 'node:crypto'
import { isAbsolute } from 'node:path'
import { editJsonText, objectAt, readJsonText } from '../config/json-file'
import { writeAtomically } from '../../fs/atomic-write'
import { McpFailure } from '../errors'
import { hostConfigPath, hostFormat, type ExportHost } from './hosts'
import { lineDiff } from './line-diff'

/** How a host starts our launcher: absolute paths only, so whatever PATH the host gives it does not matter. */
export interface LauncherCommand {
  /** Absolute path of the node (or Electron-as-node) binary. */
  node: string
  /** Absolute path of `bin/syncscope.js`. */
  bin: string
  dataDir: string
  workspace: string
  /** The one config file the servers come from (`--config`), when not the workspace and settings layers. */
  configFile?: string
}

export interface ExportPlan {
  host: ExportHost
  path: string
  /** The file as read ('' when it does not exist yet). */
  before: string
  after: string
  /** Unified-style lines (`+`/`-`/` `), empty when nothing would change. */
  diff: string[]
  added: string[]
  updated: string[]
  removed: string[]
  /** Names the file already uses for something that is not our launcher: left alone. */
  conflicts: string[]
  /** Digest of `before`: apply refuses when the file changed since the preview. */
  beforeDigest: string
  mode: number
}

const digest = (text: string) => createHash('sha256').update(text).digest('hex')

/** The entry that runs one server through `syncscope mcp run`: no secret in it, only names and paths. */
export function launcherEntry(host: ExportHost, server: string, command: LauncherCommand): Record<string, unknown> {
  const paths = [
    ['node', command.node],
    ['bin', command.bin],
    ['data folder', command.dataDir],
    ['workspace', command.workspace],
    ['config', command.configFile ?? '/']
  ] as const
  for (const [what, path] of paths) {
    if (!isAbsolute(path)) throw new McpFailure('invalid_config', `the ${what} path must be absolute (got ${path})`)
  }
  const args = [
    command.bin,
    'mcp',
    'run',
    server,
    '--data-dir',
    command.dataDir,
    '--workspace',
    command.workspace,
    ...(command.configFile ? ['--config', command.configFile] : [])
  ]
  return { ...(hostFormat(host).typed ? { type: 'stdio' } : {}), command: command.node, args }
}

/** One of ours: it runs this bin's `mcp run` on this data folder (another workspace's entries are not touched). */
function isOurs(entry: unknown, command: LauncherCommand): boolean {
  const args = (entry as { args?: unknown } | null)?.args
  if (!Array.isArray(args)) return false
  const dataDir = args.indexOf('--data-dir')
  return (
    args[0] === command.bin &&
    args[1] === 'mcp' &&
    args[2] === 'run' &&
    dataDir > 0 &&
    args[dataDir + 1] === command.dataDir
  )
}

/**
 * What exporting `servers` to a host would write: an entry per server calling the launcher, our entries for servers
 * that are gone removed, everything else in the file (other servers, other keys, key order, indentation) kept.
 */
export async function planExport(
  host: ExportHost,
  servers: string[],
  command: LauncherCommand,
  path = hostConfigPath(host)
): Promise<ExportPlan> {
  const { text: before, mode } = await readJsonText(path)
  const added: string[] = []
  const updated: string[] = []
  const removed: string[] = []
  const conflicts: string[] = []
  const after = editJsonText(path, before, (root) => {
    const map = objectAt(root, [hostFormat(host).mapKey])
    for (const [name, existing] of Object.entries(map)) {
      if (isOurs(existing, command) && !servers.includes(name)) {
        delete map[name]
        removed.push(name)
      }
    }
    for (const server of servers) {
      const entry = launcherEntry(host, server, command)
      const existing = map[server]
      if (existing === undefined) added.push(server)
      else if (!isOurs(existing, command)) {
        conflicts.push(server)
        continue
      } else if (JSON.stringify(existing) !== JSON.stringify(entry)) updated.push(server)
      map[server] = entry
    }
  })
  const unchanged =
    after === before ||
    (before.trim() !== '' && JSON.stringify(JSON.parse(before)) === JSON.stringify(JSON.parse(after)))
  return {
    host,
    path,
    before,
    after: unchanged ? before : after,
    diff: unchanged ? [] : lineDiff(before, after),
    added,
    updated,
    removed,
    conflicts,
    beforeDigest: digest(before),
    mode
  }
}

/** Writes a previewed plan atomically; refuses when the file changed since the preview (the host may have saved it). */
export async function applyExport(plan: ExportPlan): Promise<void> {
  if (plan.diff.length === 0) return
  const { text } = await readJsonText(plan.path)
  if (digest(text) !== plan.beforeDigest) {
    throw new McpFailure(
      'invalid_config',
      `${plan.path} changed since the preview; run the export again to see the new diff`
    )
  }
  await writeAtomically(plan.path, plan.after, plan.mode)
}
