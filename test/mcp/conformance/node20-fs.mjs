// `fs` as @modelcontextprotocol/conformance imports it, plus `globSync`, which Node 20 lacks (22 has it). The suite
// uses globSync only in its `tier-check` command, which is never run here.
export * from 'node:fs'
export { default } from 'node:fs'

export function globSync() {
  throw new Error('globSync needs Node 22; this shim serves the conformance suite on Node 20 (no tier-check)')
}
