// Starts a stdio server through the registry, calls it, and exits at once (the app quitting without closing the
// registry): the server's process group must not outlive us. Prints the pid of the group leader first.
import { Registry } from '../../../src/main/mcp/registry'

async function main(): Promise<void> {
  const [command, ...args] = process.argv.slice(2)
  const registry = new Registry()
  await registry.addServer({
    name: 'leaving',
    transport: 'stdio',
    command: command!,
    args,
    env: { FIXTURE_LINGER: '1' }
  })
  await registry.callTool('leaving', 'where')
  process.stdout.write(`${registry.describe('leaving').pid}\n`)
  process.exit(0)
}

void main()
