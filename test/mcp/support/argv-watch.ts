import { readdirSync, readFileSync } from 'node:fs'

/** Every command line seen in /proc while it runs: any process of the machine, not only our children. */
export interface ArgvWatch {
  stop(): Promise<string[]>
}

function scan(seen: Set<string>): void {
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'latin1')
      if (cmdline) seen.add(cmdline.replace(/\0/g, ' ').trim())
    } catch {
      // the process ended between readdir and read
    }
  }
}

/** Scans /proc/*\/cmdline about every millisecond until stopped. */
export function watchArgv(): ArgvWatch {
  const seen = new Set<string>()
  let running = true
  const loop = (async () => {
    while (running) {
      scan(seen)
      await new Promise((resolve) => setTimeout(resolve, 1))
    }
  })()
  return {
    async stop() {
      running = false
      await loop
      scan(seen)
      return [...seen]
    }
  }
}
