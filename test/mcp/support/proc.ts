import { readdir, readFile } from 'node:fs/promises'

/** Pids of live processes whose command line names `marker` (from /proc: the real process table). */
export async function processesNaming(marker: string): Promise<number[]> {
  const found: number[] = []
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const cmdline = await readFile(`/proc/${name}/cmdline`, 'utf8')
      const status = await readFile(`/proc/${name}/status`, 'utf8')
      if (cmdline.includes(marker) && !/^State:\s+Z/m.test(status)) found.push(Number(name))
    } catch {
      // gone meanwhile
    }
  }
  return found
}

/** Pids of live processes with `arg` as one of their arguments exactly (a shell's `-c` script does not count). */
export async function processesWithArg(arg: string): Promise<number[]> {
  const found: number[] = []
  for (const pid of await processesNaming(arg)) {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')
    if (cmdline.split('\0').includes(arg)) found.push(pid)
  }
  return found
}

/** Pids of the live members of a process group (field 5 of /proc/<pid>/stat). */
export async function groupMembers(pgid: number): Promise<number[]> {
  const found: number[] = []
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = await readFile(`/proc/${name}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') found.push(Number(name))
    } catch {
      // gone meanwhile
    }
  }
  return found
}
