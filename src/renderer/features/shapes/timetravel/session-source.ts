import type { LogSourceInput } from '../../../../shared/contract/timetravel'
import type { WorkbenchSettings } from '../../../../shared/contract/shapes-workbench'
import type { WorkbenchSession } from '../session'
import type { TimeTravelSession } from './TimeTravelTab'

/**
 * Time travel's view of a workbench session: the server's log of its shape (the local server's files by the handle
 * the stream follows; a custom URL's log followed from -1 with the session's headers and parameters; none behind the
 * proxy, whose token is asked for per run) and what the session received, as its recording.
 */
export function timeTravelOf(
  session: WorkbenchSession,
  target: WorkbenchSettings['target']['kind']
): TimeTravelSession {
  const serverLog = (): LogSourceInput => {
    if (target === 'local') {
      const handle = session.summary?.protocolParams.handle
      if (!handle) throw new Error('the shape has no handle yet: wait for its first answer')
      return { kind: 'local', handle }
    }
    const url = new URL(session.config.url)
    for (const [name, value] of Object.entries(session.config.params)) url.searchParams.set(name, value)
    const headers = Object.entries(session.config.headers).flatMap(([name, value]) =>
      typeof value === 'string' ? [{ name, value, redacted: false }] : []
    )
    return { kind: 'url', url: url.toString(), headers, params: [] }
  }
  return {
    serverLog: target === 'proxy' ? null : serverLog,
    recording: async () => ({
      name: `workbench-${session.config.definition.table}.json`,
      text: JSON.stringify(await session.recording())
    }),
    appDatabase: session.config.appDatabase ?? false,
    local: target === 'local'
  }
}
