import { readdir, readFile } from 'node:fs/promises'

/** Pids of the live (not zombie) processes whose /proc/<pid>/cmdline and /proc/<pid>/stat pass `keep`. */
async function liveProcesses(
  keep: (cmdline: string, stat: { state: string; pgrp: number }) => boolean
): Promise<number[]> {
  const found: number[] = []
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const [cmdline, stat] = await Promise.all([
        readFile(`/proc/${name}/cmdline`, 'utf8'),
        readFile(`/proc/${name}/stat`, 'utf8')
      ])
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      const state = fields[0] ?? ''
      if (state !== 'Z' && keep(cmdline, { state, pgrp: Number(fields[2]) })) found.push(Number(name))
    } catch {
      // gone meanwhile
    }
  }
  return found
}

/** Pids of live processes whose command line names `marker` (from /proc: the real process table). */
export const processesNaming = (marker: string) => liveProcesses((cmdline) => cmdline.includes(marker))

/** Pids of live processes with `arg` as one of their arguments exactly (a shell's `-c` script does not count). */
export const processesWithArg = (arg: string) => liveProcesses((cmdline) => cmdline.split('\0').includes(arg))

/** Pids of the live members of a process group. */
export const groupMembers = (pgid: number) => liveProcesses((_cmdline, stat) => stat.pgrp === pgid)
