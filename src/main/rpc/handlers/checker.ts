import type { checkerCalls } from '../../../shared/contract/checker'
import { RpcError } from '../../../shared/contract/errors'
import { CHECKS, CheckerUsageError, runConformance } from '../../checker/run'
import type { Core } from '../../core'
import { listTables } from '../../db/introspect'
import type { Rooms } from '../../rooms'
import type { HandlersFor } from '../dispatcher'

export function checkerHandlers(core: Core, rooms: Rooms): HandlersFor<typeof checkerCalls> {
  const { serve } = rooms.context
  const localUrl = () => (rooms.context.serverUrl ? `${rooms.context.serverUrl}/v1/shape` : null)
  return {
    'checker.defaults': async () => {
      const tables = await Promise.resolve()
        .then(() => listTables(core.database().pool))
        .catch(() => [])
      const table =
        tables.find((candidate) => candidate.schema === 'public' && candidate.name === 'issues') ?? tables[0]
      return {
        url: localUrl(),
        headerBrand: serve.headerBrand,
        table: table ? (table.schema === 'public' ? table.name : `${table.schema}.${table.name}`) : null,
        checks: CHECKS.map(({ id, title }) => ({ id, title }))
      }
    },
    'checker.run': async (input) => {
      const local = input.url === null
      const url = input.url ?? localUrl()
      if (!url) throw new RpcError('no_shape_server', "the app's shape server is not listening yet")
      if (input.writeToAppDatabase && !local)
        throw new RpcError(
          'writes_only_here',
          "live changes go into this app's database, so they only make sense when checking this app"
        )
      // This app's own secret is added for it; a remote service gets what the page was given.
      const params = { ...(local && serve.secret ? { secret: serve.secret } : {}), ...input.params }
      try {
        return await runConformance(
          {
            url,
            headerBrand: input.headerBrand ?? serve.headerBrand,
            table: input.table,
            writeSql: input.writeToAppDatabase ? core.database().url : null,
            headers: input.headers,
            params,
            only: input.only,
            maxWaitSeconds: input.maxWaitSeconds
          },
          (check) => core.events.emit('checker.progress', { check })
        )
      } catch (error) {
        if (error instanceof CheckerUsageError) throw new RpcError('invalid_check', error.message)
        throw error
      }
    }
  }
}
