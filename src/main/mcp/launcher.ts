import type { Readable, Writable } from 'node:stream'
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import {
  InitializeResultSchema,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type RequestId
} from '@modelcontextprotocol/sdk/types.js'
import type { StdioSpawnSpec } from './connection'
import { endGroup, spawnInGroup } from './process-group'
import type { Registry } from './registry'

export interface LaunchIo {
  stdin: Readable
  stdout: Writable
  /** Where the launcher's own problems go (a host shows a server's stderr in its log). */
  log: (line: string) => void
}

/**
 * `syncscope mcp run <server>`, what other hosts start: a stdio server runs as our child with its secrets in its
 * environment; a remote one is bridged, stdio on our side and streamable HTTP with its tokens on the other. Resolves
 * with the exit code once the host closes stdin or the server goes away.
 */
export async function runServer(registry: Registry, name: string, io: LaunchIo): Promise<number> {
  const launch = await registry.launch(name)
  if (launch.transport === 'http') return bridge(name, launch.remote, io)
  if (launch.warning) io.log(launch.warning)
  return runStdio(launch.spawn, io)
}

/** The server's group gets a moment to exit by itself once stdin ends, as a host expects, then SIGTERM. */
const STDIN_GRACE_MS = 1_000

function runStdio(spec: StdioSpawnSpec, io: LaunchIo): Promise<number> {
  return new Promise((resolve) => {
    const child = spawnInGroup(spec.command, spec.args, {
      env: spec.env,
      ...(spec.cwd ? { cwd: spec.cwd } : {}),
      stdio: ['pipe', 'pipe', 'inherit']
    })
    const pgid = child.pid
    io.stdin.pipe(child.stdin!)
    child.stdout!.pipe(io.stdout)
    // the host ends us by closing stdin and then by signals: both reach every process of the server's group
    const onSignal = () => void endGroup(pgid)
    process.on('SIGTERM', onSignal)
    process.on('SIGINT', onSignal)
    io.stdin.once('end', () => setTimeout(() => void endGroup(pgid), STDIN_GRACE_MS).unref())
    child.once('error', (error) => {
      io.log(`cannot start \`${spec.command}\`: ${error.message}`)
      resolve(127)
    })
    // `exit`, not `close`: a grandchild holding the pipes would keep `close` from coming; the group goes with the leader
    child.once('exit', (code, signal) => {
      process.off('SIGTERM', onSignal)
      process.off('SIGINT', onSignal)
      io.stdin.unpipe(child.stdin!)
      void endGroup(pgid).then(() => resolve(code ?? (signal ? 1 : 0)))
    })
  })
}

async function bridge(name: string, remote: StreamableHTTPClientTransport, io: LaunchIo): Promise<number> {
  const local = new StdioServerTransport(io.stdin, io.stdout)
  const initializeIds = new Set<RequestId>()
  let finish: (code: number) => void = () => {}
  const finished = new Promise<number>((resolve) => (finish = resolve))
  let closing = false
  const close = async (code: number) => {
    if (closing) return
    closing = true
    await Promise.all([remote.close().catch(() => {}), local.close().catch(() => {})])
    finish(code)
  }

  local.onmessage = (message: JSONRPCMessage) => {
    if (isJSONRPCRequest(message) && message.method === 'initialize') initializeIds.add(message.id)
    remote.send(message).catch((error: unknown) => {
      const text = `${name}: ${(error as Error).message}`
      io.log(text)
      // a request the server never saw gets an error answer, so the host does not wait for its timeout
      if (isJSONRPCRequest(message))
        void local.send({ jsonrpc: '2.0', id: message.id, error: { code: -32603, message: text } }).catch(() => {})
    })
  }
  remote.onmessage = (message: JSONRPCMessage) => {
    if (isJSONRPCResultResponse(message) && initializeIds.delete(message.id)) {
      const result = InitializeResultSchema.safeParse(message.result)
      if (result.success) remote.setProtocolVersion(result.data.protocolVersion)
    }
    void local.send(message).catch(() => {})
  }
  local.onclose = () => void close(0)
  remote.onclose = () => void close(0)
  // closing aborts the SSE stream: that is not worth a line in the host's log
  remote.onerror = (error) => closing || io.log(`${name}: ${error.message}`)
  io.stdin.once('end', () => void close(0))
  await remote.start()
  await local.start()
  return finished
}
