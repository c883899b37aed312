import type { ToolFilter } from '../../shared/contract/mcp-tool-filter'
import { HostFormatSchema, type ServerBudget } from '../../shared/contract/mcp-tools'
import type { McpHost } from '../mcp/host'
import { toolVerdict } from '../mcp/tools/filter'
import { measureServer, saveToolFilter } from '../mcp/tools/budgets'
import { UsageError, type Output } from './output'

export const TOOLS_USAGE = `syncscope mcp tools <server> [--json]              the tools of a server (mcp__<server>__<tool>)
      --budget [--format claude|openai] [--context-window N]
                                                     what each tool's definition costs in tokens as the host sends it
      --allow PATTERN… --deny PATTERN… --unset PATTERN… --expose-all
                                                     edit which tools other hosts get through \`mcp run\` (* and ? glob)`

export const DEFAULT_CONTEXT_WINDOW = 200_000

export interface ToolsValues {
  json?: boolean | undefined
  budget?: boolean | undefined
  format?: string | undefined
  'context-window'?: string | undefined
  allow?: string[] | undefined
  deny?: string[] | undefined
  unset?: string[] | undefined
  'expose-all'?: boolean | undefined
}

/** The filter after the command line's edits, or undefined when it asks for none. */
function editedFilter(current: ToolFilter | undefined, values: ToolsValues): ToolFilter | null | undefined {
  const { allow = [], deny = [], unset = [] } = values
  if (values['expose-all']) {
    if (allow.length + deny.length + unset.length > 0)
      throw new UsageError('--expose-all removes the whole filter: give it alone')
    return null
  }
  if (allow.length + deny.length + unset.length === 0) return undefined
  const drop = (list: string[]) => list.filter((pattern) => !unset.includes(pattern))
  const nextAllow = current?.allow || allow.length > 0 ? drop([...(current?.allow ?? []), ...allow]) : undefined
  return { ...(nextAllow ? { allow: nextAllow } : {}), deny: drop([...(current?.deny ?? []), ...deny]) }
}

const percent = (tokens: number, window: number) => `${((tokens * 100) / window).toFixed(2)}%`

function budgetText(budget: ServerBudget, window: number): string {
  const sender = budget.format === 'claude' ? 'Claude Code sends them' : 'VS Code sends them (OpenAI function tools)'
  const approx = budget.exact ? '' : '≈'
  const lines = [
    `${budget.server}: ${budget.total.tools} tools, ${approx}${budget.total.tokens} tokens as ${sender}: ${percent(budget.total.tokens, window)} of a ${window.toLocaleString('en')}-token context window`,
    `exposed to other hosts (syncscope mcp run): ${budget.exposed.tools} tools, ${approx}${budget.exposed.tokens} tokens (${percent(budget.exposed.tokens, window)})`,
    '',
    `${'tokens'.padStart(7)} ${'share'.padStart(7)} ${'descr'.padStart(6)} ${'input'.padStart(6)} ${'output'.padStart(6)}  tool`
  ]
  const sorted = [...budget.tools].sort((a, b) => b.tokens - a.tokens || a.name.localeCompare(b.name))
  for (const tool of sorted) {
    const { description, inputSchema, outputSchema } = tool.parts
    const hidden = tool.exposed ? '' : `  [hidden: ${tool.reason}]`
    lines.push(
      `${`${tool.exact ? '' : '≈'}${tool.tokens}`.padStart(7)} ${percent(tool.tokens, window).padStart(7)} ${String(description).padStart(6)} ${String(inputSchema).padStart(6)} ${String(outputSchema ?? '-').padStart(6)}  ${tool.name}${hidden}`
    )
  }
  lines.push(
    '',
    'output: the output schema, which hosts receive but do not send to the model (not in the totals).',
    `tokens: ${budget.tokenizer.encoding} (${budget.tokenizer.package} ${budget.tokenizer.version}). ${budget.tokenizer.note}`
  )
  return `${lines.join('\n')}\n`
}

function contextWindow(text: string | undefined): number {
  if (text === undefined) return DEFAULT_CONTEXT_WINDOW
  const window = Number(text)
  if (!Number.isInteger(window) || window <= 0)
    throw new UsageError('--context-window must be a positive whole number of tokens')
  return window
}

/** `syncscope mcp tools <server>`: the list, the budget (`--budget`), and edits of the server's tool filter. */
export async function toolsCommand(host: McpHost, server: string, values: ToolsValues, io: Output): Promise<number> {
  const format = HostFormatSchema.safeParse(values.format ?? 'claude')
  if (!format.success) throw new UsageError('--format must be claude or openai')
  const window = contextWindow(values['context-window'])
  const edit = editedFilter(host.registry.toolFilter(server), values)
  if (edit !== undefined) {
    await saveToolFilter(host, server, edit)
    io.err(
      `${server}: tool filter ${edit ? JSON.stringify(host.registry.toolFilter(server) ?? {}) : 'removed: every tool is exposed'}\n`
    )
  }
  if (values.budget) {
    const budget = await measureServer(host.registry, server, format.data)
    io.out(
      values.json ? `${JSON.stringify({ ...budget, contextWindow: window }, null, 2)}\n` : budgetText(budget, window)
    )
    return 0
  }
  const tools = await host.registry.tools(server)
  const filter = host.registry.toolFilter(server)
  if (values.json) {
    io.out(
      `${JSON.stringify(
        tools.map((tool) => ({ ...tool, ...toolVerdict(filter, tool.tool) })),
        null,
        2
      )}\n`
    )
    return 0
  }
  const line = (tool: (typeof tools)[number]) => {
    const verdict = toolVerdict(filter, tool.tool)
    return `${tool.name}${tool.description ? `  ${tool.description}` : ''}${verdict.exposed ? '' : `  [hidden: ${verdict.reason}]`}`
  }
  io.out(`${tools.map(line).join('\n')}\n`)
  return 0
}
