import { parseArgs } from 'node:util'
import { type ClusterInfo, clusterState } from '../../shared/contract/db'
import { formatBytes } from '../../shared/format-bytes'
import { clusterList, pruneClusters, removeClusters, unknownClusters } from '../db/cluster-inventory'
import { clustersRoot } from '../db/cluster-pairing'
import { isRoot } from '../db/run-as'
import type { Output } from './output'

export const CLUSTERS_USAGE = `syncscope clusters list [--json]        the embedded clusters kept apart from their data folders (as root)
  syncscope clusters prune [--json]       remove those whose data folder is gone and whose Postgres is not running
  syncscope clusters remove <id>…         remove clusters by id, also those whose data folder cannot be known;
                                          never one that is running or that a data folder still names
  syncscope clusters remove --unknown     remove every stopped cluster whose data folder cannot be known
the clusters folder: SYNCSCOPE_CLUSTERS_DIR, else /var/lib/syncscope/clusters`

function formatList(root: string, clusters: ClusterInfo[]): string {
  const total = clusters.reduce((sum, cluster) => sum + cluster.sizeBytes, 0)
  const lines = [`${clusters.length} cluster(s) in ${root}, ${formatBytes(total)}`]
  for (const cluster of clusters)
    lines.push(
      `${cluster.id}  ${formatBytes(cluster.sizeBytes).padStart(10)}  ${clusterState(cluster).padEnd(8)}  ${cluster.reason}`
    )
  const prunable = clusters.filter((cluster) => cluster.orphaned && !cluster.running)
  if (prunable.length > 0)
    lines.push(
      `\`syncscope clusters prune\` removes the ${prunable.length} orphaned one(s) that are not running (${formatBytes(prunable.reduce((sum, cluster) => sum + cluster.sizeBytes, 0))})`
    )
  if (clusters.some((cluster) => ['unknown', 'kept'].includes(clusterState(cluster))))
    lines.push(
      'an `unknown` or `kept` cluster is never pruned: once you know no data folder uses it, `syncscope clusters remove <id>` removes it'
    )
  return `${lines.join('\n')}\n`
}

interface Values {
  json?: boolean
  unknown?: boolean
}
type Command = (root: string, ids: string[], values: Values, io: Output) => Promise<number>

const COMMANDS: Record<string, Command> = {
  async list(root, _ids, values, io) {
    const { clusters } = await clusterList(null)
    io.out(values.json ? `${JSON.stringify({ root, clusters }, null, 2)}\n` : formatList(root, clusters))
    return 0
  },
  async prune(root, _ids, values, io) {
    const result = await pruneClusters(root)
    if (values.json) io.out(`${JSON.stringify(result, null, 2)}\n`)
    else {
      for (const cluster of result.removed)
        io.out(`removed ${cluster.id} (${formatBytes(cluster.sizeBytes)}): ${cluster.reason}\n`)
      for (const name of result.leftovers) io.out(`removed ${name}, left half-made by a process that died\n`)
      const freed = result.removed.reduce((sum, cluster) => sum + cluster.sizeBytes, 0)
      io.out(`${result.removed.length} cluster(s) removed from ${root}, ${formatBytes(freed)} freed\n`)
    }
    return 0
  },
  async remove(root, ids, values, io) {
    if (values.unknown && ids.length > 0) return usage(io, 'give cluster ids or --unknown, not both')
    const targets = values.unknown ? await unknownClusters(root) : ids
    if (targets.length === 0)
      return values.unknown
        ? (io.out('no stopped cluster without a known data folder\n'), 0)
        : usage(io, 'name a cluster id')
    let refused = 0
    for (const outcome of await removeClusters(root, targets)) {
      if (outcome.removed) io.out(`removed ${outcome.id} (${formatBytes(outcome.sizeBytes)})\n`)
      else {
        refused += 1
        io.err(`syncscope clusters: kept ${outcome.id}: ${outcome.why}\n`)
      }
    }
    return refused > 0 ? 1 : 0
  }
}

function usage(io: Output, message: string): number {
  io.err(`syncscope clusters: ${message}\n\nusage:\n  ${CLUSTERS_USAGE}\n`)
  return 2
}

/** `syncscope clusters …`: what root keeps in the clusters folder, and removing what no data folder needs. */
export async function clustersMain(
  argv: string[],
  io: Output = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) }
): Promise<number> {
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: true,
      options: { json: { type: 'boolean' }, unknown: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } }
    })
  } catch (error) {
    return usage(io, (error as Error).message)
  }
  const [command, ...ids] = parsed.positionals
  if (!command || parsed.values.help) {
    io.out(`usage:\n  ${CLUSTERS_USAGE}\n`)
    return parsed.values.help ? 0 : 2
  }
  const run = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined
  if (!run) return usage(io, `unknown clusters command '${command}'`)
  if (command !== 'remove' && ids.length > 0) return usage(io, `\`clusters ${command}\` takes no ids`)
  if (!isRoot()) {
    io.out(
      'not running as root: each data folder holds its own embedded cluster, and there is no clusters folder (only root keeps clusters apart from their data folders)\n'
    )
    return 0
  }
  let root: string
  try {
    root = clustersRoot()
  } catch (error) {
    return usage(io, (error as Error).message)
  }
  return run(root, ids, parsed.values, io)
}
