import { z } from 'zod'
import { call } from './define'
import { McpServerNameSchema, McpStateSchema } from './mcp'
import { ToolFilterSchema } from './mcp-tool-filter'

/**
 * How a host puts a tool in front of the model. `claude`: Claude Code's entry of the Anthropic Messages API's `tools`
 * (`{name: mcp__<server>__<tool>, description (cut at 2048 characters), input_schema}`); `openai`: the function tool of
 * the OpenAI-style APIs that VS Code (Copilot) and Cursor use (`{type: "function", function: {name: mcp_<server>_<tool>,
 * description, parameters}}`). Neither sends the output schema.
 */
export const HostFormatSchema = z.enum(['claude', 'openai'])
export type HostFormat = z.infer<typeof HostFormatSchema>

export const TokenizerInfoSchema = z.object({
  package: z.string(),
  version: z.string(),
  encoding: z.string(),
  note: z.string()
})

export const ToolCostSchema = z.object({
  /** The name the host gives the model. */
  name: z.string(),
  /** The server's own name of the tool. */
  tool: z.string(),
  exposed: z.boolean(),
  /** Why hosts do not get it (the deny pattern, or the allow list). */
  reason: z.string().nullable(),
  /** Tokens of `serialized`: the definition exactly as the host sends it. */
  tokens: z.number().int(),
  /** False where a text was too long or too odd to count exactly (then estimated). */
  exact: z.boolean(),
  /** Each part on its own (their sum is less than `tokens`: the JSON around them counts too). */
  parts: z.object({
    name: z.number().int(),
    description: z.number().int(),
    inputSchema: z.number().int(),
    /** Received by the host, not sent to the model; null when the tool has none. */
    outputSchema: z.number().int().nullable()
  }),
  /** The definition as the host sends it (compact JSON). */
  serialized: z.string()
})
export type ToolCost = z.infer<typeof ToolCostSchema>

const TotalSchema = z.object({ tools: z.number().int(), tokens: z.number().int() })

export const ServerBudgetSchema = z.object({
  server: z.string(),
  format: HostFormatSchema,
  tokenizer: TokenizerInfoSchema,
  filter: ToolFilterSchema.nullable(),
  tools: z.array(ToolCostSchema),
  /** Every tool the server lists: the sum of their `tokens`. */
  total: TotalSchema,
  /** What hosts get through the filter. */
  exposed: TotalSchema,
  exact: z.boolean()
})
export type ServerBudget = z.infer<typeof ServerBudgetSchema>

/** One server's totals for the overview; null budget when its tools have not been listed yet (nothing is started for it). */
export const BudgetOverviewSchema = z.object({
  tokenizer: TokenizerInfoSchema,
  servers: z.array(
    z.object({
      server: z.string(),
      state: McpStateSchema,
      filter: ToolFilterSchema.nullable(),
      total: TotalSchema.nullable(),
      exposed: TotalSchema.nullable(),
      exact: z.boolean()
    })
  )
})
export type BudgetOverview = z.infer<typeof BudgetOverviewSchema>

const formatInput = { format: HostFormatSchema.default('claude') }

export const mcpToolCalls = {
  /** Lists the server's tools (starting it if needed) and what each costs as the host sends it. */
  'mcp.toolBudget': call(z.object({ name: McpServerNameSchema, ...formatInput }), ServerBudgetSchema),
  /** Every server's totals from the tools known so far; starts nothing. */
  'mcp.budgetOverview': call(z.object(formatInput), BudgetOverviewSchema),
  /** Ticks (exposed) or unticks one tool: its name goes into or out of the filter's lists, as little as that takes. */
  'mcp.setToolExposed': call(
    z.object({ name: McpServerNameSchema, tool: z.string().min(1), exposed: z.boolean(), ...formatInput }),
    ServerBudgetSchema
  ),
  /** Writes the server's `tools` filter into its file (null removes it); no reconnect. */
  'mcp.setToolFilter': call(
    z.object({ name: McpServerNameSchema, filter: ToolFilterSchema.nullable(), ...formatInput }),
    ServerBudgetSchema
  )
}
