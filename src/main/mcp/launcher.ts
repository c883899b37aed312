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
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { StdioSpawnSpec } from './connection'
import { endGroup, spawnInGroup } from './process-group'
import type { Registry } from './registry'
import { ToolGate } from './tools/gate'

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
  // with a tool filter every message goes through the gate; without one a stdio server's bytes are piped as they are
  const filter = registry.toolFilter(name)
  const gate = filter ? new ToolGate(name, filter) : null
  if (launch.transport === 'http') return bridge(name, launch.remote, io, gate)
  if (launch.warning) io.log(launch.warning)
  return runStdio(name, launch.spawn, io, gate)
}

/** The server's group gets a moment to exit by itself once stdin ends, as a host expects, then SIGTERM. */
const STDIN_GRACE_MS = 1_000

function runStdio(name: string, spec: StdioSpawnSpec, io: LaunchIo, gate: ToolGate | null): Promise<number> {
  return new Promise((resolve) => {
    const child = spawnInGroup(spec.command, spec.args, {
      env: spec.env,
      ...(spec.cwd ? { cwd: spec.cwd } : {}),
      stdio: ['pipe', 'pipe', 'inherit']
    })
    const pgid = child.pid
    if (gate) {
      // the child's stdout is read and its stdin written the way a server transport does it with ours
      const local = new StdioServerTransport(io.stdin, io.stdout)
      const remote = new StdioServerTransport(child.stdout!, child.stdin!)
      relay(name, local, remote, gate, io)
      void local.start()
      void remote.start()
    } else {
      io.stdin.pipe(child.stdin!)
      child.stdout!.pipe(io.stdout)
    }
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
      if (!gate) io.stdin.unpipe(child.stdin!)
      void endGroup(pgid).then(() => resolve(code ?? (signal ? 1 : 0)))
    })
  })
}

/**
 * Messages between the host's side and the server's, through the gate: a message the gate answers goes back to the
 * host; a line that is not a JSON-RPC message is dropped (it cannot be checked), with a line in the host's log.
 */
function relay(name: string, local: Transport, remote: Transport, gate: ToolGate, io: LaunchIo): void {
  local.onmessage = (message) => {
    const { forward, answer } = gate.fromHost(message)
    if (answer) void local.send(answer).catch(() => {})
    if (forward) void remote.send(forward).catch((error: unknown) => io.log(`${name}: ${(error as Error).message}`))
  }
  remote.onmessage = (message) => void local.send(gate.fromServer(message)).catch(() => {})
  local.onerror = (error) => io.log(`${name}: a message from the host was dropped: ${error.message}`)
  remote.onerror = (error) => io.log(`${name}: a message from the server was dropped: ${error.message}`)
}

async function bridge(
  name: string,
  remote: StreamableHTTPClientTransport,
  io: LaunchIo,
  gate: ToolGate | null
): Promise<number> {
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

  local.onmessage = (received: JSONRPCMessage) => {
    const { forward: message, answer } = gate ? gate.fromHost(received) : { forward: received, answer: null }
    if (answer) void local.send(answer).catch(() => {})
    if (!message) return
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
    void local.send(gate ? gate.fromServer(message) : message).catch(() => {})
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
