import { randomUUID } from 'node:crypto'
import type { ElicitRequest, ElicitResult } from '@modelcontextprotocol/sdk/types.js'
import type { McpElicitation, McpElicitationAnswer } from '../../shared/contract/mcp'
import { McpFailure } from './errors'
import { schemaViolations } from './json-schema'
import { formDefaults } from '../../shared/mcp-elicitation'

interface Pending {
  elicitation: McpElicitation
  resolve: (result: ElicitResult) => void
}

/**
 * Elicitation requests of servers, waiting for a person: each is announced (the UI shows its form), listed while it
 * waits, and ends with the answer, or as `cancel` when the server gives up (its request aborted).
 */
export class Elicitations {
  private readonly pending = new Map<string, Pending>()

  constructor(private readonly announce: (elicitation: McpElicitation) => void = () => {}) {}

  ask(server: string, params: ElicitRequest['params'], signal: AbortSignal): Promise<ElicitResult> {
    const id = randomUUID()
    const form = params.mode === 'url' ? null : params
    const elicitation: McpElicitation = {
      id,
      server,
      message: params.message,
      mode: params.mode === 'url' ? 'url' : 'form',
      requestedSchema: (form?.requestedSchema as Record<string, unknown> | undefined) ?? null,
      url: params.mode === 'url' ? params.url : null,
      at: new Date().toISOString()
    }
    return new Promise<ElicitResult>((resolve) => {
      const done = (result: ElicitResult) => {
        this.pending.delete(id)
        resolve(result)
      }
      this.pending.set(id, { elicitation, resolve: done })
      signal.addEventListener('abort', () => done({ action: 'cancel' }), { once: true })
      this.announce(elicitation)
    })
  }

  list(server?: string): McpElicitation[] {
    return [...this.pending.values()]
      .map((pending) => pending.elicitation)
      .filter((elicitation) => !server || elicitation.server === server)
  }

  /**
   * The person's answer. Accepted content gets the requested schema's defaults for the fields it leaves out
   * (SEP-1034: accepting without content accepts every default), and must then match the schema.
   */
  async answer(answer: McpElicitationAnswer): Promise<void> {
    const pending = this.pending.get(answer.id)
    if (!pending)
      throw new McpFailure(
        'invalid_answer',
        `no elicitation ${answer.id} is waiting (answered already, or the server gave up)`
      )
    const schema = pending.elicitation.requestedSchema
    const content = { ...formDefaults(schema), ...answer.content }
    if (answer.action === 'accept' && schema) {
      const faults = await schemaViolations(schema, content)
      if (faults.length > 0)
        throw new McpFailure(
          'invalid_answer',
          `the answer does not match the form of ${pending.elicitation.server}: ${faults.join(', ')}`
        )
    }
    pending.resolve(
      answer.action === 'accept'
        ? { action: 'accept', content: content as ElicitResult['content'] }
        : { action: answer.action }
    )
  }

  /** A server went away: its questions end as cancelled. */
  cancelAll(server: string): void {
    for (const pending of [...this.pending.values()])
      if (pending.elicitation.server === server) pending.resolve({ action: 'cancel' })
  }
}
