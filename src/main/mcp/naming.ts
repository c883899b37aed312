const TOOL_NAME_LIMIT = 128

const safe = (text: string) => text.replace(/[^A-Za-z0-9_-]/g, '_')

/** `mcp__<server>__<tool>`, within the `^[A-Za-z0-9_-]{1,128}$` that model APIs accept for tool names. */
export function prefixedToolName(server: string, tool: string): string {
  return `mcp__${safe(server)}__${safe(tool)}`.slice(0, TOOL_NAME_LIMIT)
}

/** The server a prefixed name belongs to, among the known server names (names may themselves contain `__`). */
export function serverOfPrefixedName(prefixed: string, servers: Iterable<string>): string | undefined {
  let best: string | undefined
  for (const server of servers) {
    if (prefixed.startsWith(`mcp__${safe(server)}__`) && (!best || server.length > best.length)) best = server
  }
  return best
}
