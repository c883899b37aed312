import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'

export interface HostClient {
  client: Client
  transport: StdioClientTransport
  stderr: () => string
}

/**
 * Starts an exported entry the way a host does, with nothing of ours in its environment (`env -i PATH=/usr/bin
 * HOME=…`), over stdio, with the SDK's client.
 */
export async function startAsHost(entry: { command: string; args: string[] }, home: string): Promise<HostClient> {
  const transport = new StdioClientTransport({
    command: '/usr/bin/env',
    args: ['-i', 'PATH=/usr/bin', `HOME=${home}`, entry.command, ...entry.args],
    stderr: 'pipe'
  })
  let stderr = ''
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const client = new Client({ name: 'a-host', version: '1.0.0' })
  await client.connect(transport, { timeout: 40_000 })
  return { client, transport, stderr: () => stderr }
}
