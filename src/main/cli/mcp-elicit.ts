import type { McpElicitation } from '../../shared/contract/mcp'
import { formDefaults } from '../../shared/mcp-elicitation'
import type { Elicitations } from '../mcp/elicitation'
import type { Output } from './output'

/**
 * How `syncscope mcp` answers a server's question (elicitation/create) while a command runs. Nobody fills in a form
 * in a script: with `--accept-defaults` a form is accepted with the defaults it gives (SEP-1034) where they complete
 * it; anything else is cancelled at once, the reason on stderr, so the request never waits for an answer that cannot
 * come.
 */
export function answerInCli(
  elicitation: McpElicitation,
  elicitations: Elicitations,
  acceptDefaults: boolean,
  io: Output
): void {
  const asks = `${elicitation.server} asks: ${elicitation.message}`
  const cancel = (why: string) => {
    io.err(`${asks} — cancelled: ${why}\n`)
    elicitations.answer({ id: elicitation.id, action: 'cancel' }).catch(() => {})
  }
  if (elicitation.mode === 'url')
    return cancel(`it wants ${elicitation.url} opened, which the CLI does not do for a server; use the MCP page`)
  if (!acceptDefaults)
    return cancel('answer forms on the MCP page, or run with --accept-defaults to accept the defaults a form gives')
  const defaults = formDefaults(elicitation.requestedSchema)
  elicitations.answer({ id: elicitation.id, action: 'accept' }).then(
    () => io.err(`${asks} — accepted with its defaults ${JSON.stringify(defaults)}\n`),
    (error: unknown) => {
      const required = elicitation.requestedSchema?.required
      const missing = (Array.isArray(required) ? required : []).filter(
        (field): field is string => typeof field === 'string' && !(field in defaults)
      )
      cancel(
        missing.length > 0
          ? `${missing.join(', ')} ${missing.length === 1 ? 'has' : 'have'} no default; answer it on the MCP page`
          : (error as Error).message
      )
    }
  )
}
