const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

async function gone(pid: number, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs
  while (alive(pid)) {
    if (Date.now() >= deadline) return false
    await sleep(20)
  }
  return true
}

/**
 * Ends a child we spawned and waits until it is gone: SIGTERM, then SIGKILL after `graceMs`. The SDK's own close of a
 * failed connect is not awaited by anyone, so a child that ignores stdin's end and SIGTERM would outlive a CLI run.
 */
export async function reap(pid: number | null | undefined, graceMs = 1_000): Promise<void> {
  if (!pid || !alive(pid)) return
  try {
    process.kill(pid, 'SIGTERM')
  } catch {
    return
  }
  if (await gone(pid, graceMs)) return
  try {
    process.kill(pid, 'SIGKILL')
  } catch {
    return
  }
  await gone(pid, 5_000)
}
