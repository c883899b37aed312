import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join } from 'node:path'
import type { ToolFilter } from '../../../shared/contract/mcp-tool-filter'
import { writeAtomically } from '../../fs/atomic-write'
import { editJsonText, jsonSyntaxProblem, objectAt, readJsonText } from '../config/json-file'
import { McpFailure } from '../errors'
import { lineDiff } from './line-diff'

/** Claude Code's user settings, where its permission rules live (`CLAUDE_CONFIG_DIR` moves them). */
export function claudeSettingsPath(home = homedir(), env: NodeJS.ProcessEnv = process.env): string {
  return join(env.CLAUDE_CONFIG_DIR ?? join(home, '.claude'), 'settings.json')
}

/** The deny rules an export wrote, per settings file, in the data folder: only those are ever taken out again. */
export const WRITTEN_RULES_FILE = 'mcp-claude-rules.json'

export interface ClaudeRules {
  rules: string[]
  /** What Claude Code's rules cannot say: enforced by the launcher alone. */
  launcherOnly: string[]
}

/**
 * A server's filter in Claude Code's own form: each deny pattern as `mcp__<server>__<pattern>` in `permissions.deny`
 * (its MCP rules take `*`; deny hides the tool). Claude Code has no rule for "only these tools" (an allow rule approves
 * calls without asking, it does not limit them), nor `?` or parentheses in a rule: those stay with the launcher.
 */
export function claudeDenyRules(server: string, filter: ToolFilter | undefined): ClaudeRules {
  const rules: string[] = []
  const launcherOnly: string[] = []
  for (const pattern of filter?.deny ?? []) {
    if (/[?()]/.test(pattern)) launcherOnly.push(`${server}: deny "${pattern}"`)
    else rules.push(`mcp__${server}__${pattern}`)
  }
  if (filter?.allow) launcherOnly.push(`${server}: allow only ${JSON.stringify(filter.allow)}`)
  return { rules, launcherOnly }
}

export interface PermissionsPlan {
  path: string
  before: string
  after: string
  diff: string[]
  added: string[]
  removed: string[]
  launcherOnly: string[]
  beforeDigest: string
  mode: number
  /** The rules of ours in the file once the plan is applied (recorded in the data folder). */
  ours: string[]
  recordPath: string
}

const digest = (text: string) => createHash('sha256').update(text).digest('hex')

async function readRecord(recordPath: string): Promise<Record<string, string[]>> {
  try {
    const parsed = JSON.parse(await readFile(recordPath, 'utf8')) as unknown
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, string[]>) : {}
  } catch {
    return {}
  }
}

function denyList(path: string, text: string): unknown[] {
  if (text.trim() === '') return []
  let root: unknown
  try {
    root = JSON.parse(text)
  } catch (error) {
    throw new Error(`${path} ${jsonSyntaxProblem(error)}; fix it by hand before exporting tool filters to it`, {
      cause: error
    })
  }
  const deny = (root as { permissions?: { deny?: unknown } } | null)?.permissions?.deny
  return Array.isArray(deny) ? deny : []
}

/**
 * What the export would change in Claude Code's settings: the wanted deny rules added; rules an earlier export wrote
 * and no filter wants any more taken out. Rules the person wrote are never touched, even where they look like ours.
 */
export async function planClaudePermissions(
  servers: Array<{ name: string; filter: ToolFilter | undefined }>,
  dataDir: string,
  path = claudeSettingsPath()
): Promise<PermissionsPlan> {
  const recordPath = join(dataDir, WRITTEN_RULES_FILE)
  const { text: before, mode } = await readJsonText(path)
  const wanted = servers.map((server) => claudeDenyRules(server.name, server.filter))
  const wantedRules = [...new Set(wanted.flatMap((server) => server.rules))]
  const previously = (await readRecord(recordPath))[path] ?? []
  // with nothing to write or take out, the settings are only read: a file Claude Code itself would refuse stays theirs
  const present = wantedRules.length + previously.length === 0 ? [] : denyList(path, before)
  const removed = previously.filter((rule) => !wantedRules.includes(rule) && present.includes(rule))
  const added = wantedRules.filter((rule) => !present.includes(rule))
  const after =
    added.length + removed.length === 0
      ? before
      : editJsonText(path, before, (root) => {
          const permissions = objectAt(root, ['permissions'])
          const deny = (Array.isArray(permissions.deny) ? permissions.deny : []).filter(
            (rule: unknown) => !removed.includes(rule as string)
          )
          permissions.deny = [...deny, ...added]
        })
  const ours = [...previously.filter((rule) => wantedRules.includes(rule) && present.includes(rule)), ...added]
  return {
    path,
    before,
    after,
    diff: after === before ? [] : lineDiff(before, after),
    added,
    removed,
    launcherOnly: wanted.flatMap((server) => server.launcherOnly),
    beforeDigest: digest(before),
    mode,
    ours,
    recordPath
  }
}

/** Writes a previewed plan (refused when the file changed since), then records which rules are ours. */
export async function applyClaudePermissions(plan: PermissionsPlan, beforeDigest = plan.beforeDigest): Promise<void> {
  if (plan.diff.length > 0) {
    const { text } = await readJsonText(plan.path)
    if (digest(text) !== beforeDigest)
      throw new McpFailure(
        'invalid_config',
        `${plan.path} changed since the preview; run the export again to see the new diff`
      )
    await writeAtomically(plan.path, plan.after, plan.mode)
  }
  const record = await readRecord(plan.recordPath)
  if (JSON.stringify(record[plan.path] ?? []) === JSON.stringify(plan.ours)) return
  await writeAtomically(plan.recordPath, `${JSON.stringify({ ...record, [plan.path]: plan.ours }, null, 2)}\n`, 0o600)
}
