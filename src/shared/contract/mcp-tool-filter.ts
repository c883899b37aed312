import { z } from 'zod'

/** The most patterns one list holds: a filter is typed by a person, not generated from a catalogue. */
export const MAX_TOOL_PATTERNS = 500

/**
 * A tool name, or a glob over tool names: `*` stands for any run of characters, `?` for one, everything else is itself
 * (case-sensitive, as tool names are).
 */
export const ToolPatternSchema = z
  .string()
  .min(1, 'a tool pattern is empty')
  .max(200, 'a tool pattern is at most 200 characters')
  .regex(/^[^\s\p{C}]+$/u, 'a tool pattern has no spaces or control characters')

/**
 * Which of a server's tools other hosts get (through `syncscope mcp run`): with `allow`, only the tools it matches; never
 * a tool `deny` matches (deny wins). An empty `allow` exposes nothing.
 */
const patterns = z.array(ToolPatternSchema).max(MAX_TOOL_PATTERNS, `at most ${MAX_TOOL_PATTERNS} patterns`).optional()
export const ToolFilterSchema = z.strictObject(
  { allow: patterns, deny: patterns },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `unknown ${issue.keys.length === 1 ? 'field' : 'fields'} ${issue.keys.join(', ')} (a tool filter has allow and deny)`
        : undefined
  }
)
export type ToolFilter = z.infer<typeof ToolFilterSchema>
