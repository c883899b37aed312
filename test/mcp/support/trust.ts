import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { contentDigest, TRUST_FILE, TrustStore } from '../../../src/main/mcp/config/trust'

/** Approves `<workspace>/mcp.json` as it is now, as the person does on the MCP page or with `syncscope mcp trust`. */
export async function approveWorkspaceFile(dataDir: string, workspace: string): Promise<void> {
  const path = join(workspace, 'mcp.json')
  await new TrustStore(join(dataDir, TRUST_FILE)).approve(path, contentDigest(await readFile(path, 'utf8')))
}
