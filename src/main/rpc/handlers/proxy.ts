import type { proxyCalls } from '../../../shared/contract/proxy'
import { RpcError } from '../../../shared/contract/errors'
import type { Core } from '../../core'
import { ProxyConfigError } from '../../proxy/config'
import { maskSecret, restoreSecret } from '../../proxy/config-text'
import { tryProxy } from '../../proxy/playground'
import type { ProxyService } from '../../proxy/service'
import { userAccessToken } from '../../proxy/user-token'
import type { Rooms } from '../../rooms'
import type { HandlersFor } from '../dispatcher'

function configRefused(error: unknown): never {
  if (error instanceof ProxyConfigError) throw new RpcError('invalid_config', error.message, { issues: error.issues })
  throw error
}

export function proxyHandlers(_core: Core, rooms: Rooms): HandlersFor<typeof proxyCalls> {
  const running = (): ProxyService => {
    const { service } = rooms.proxy
    if (service) return service
    const status = rooms.proxy.status()
    throw new RpcError('proxy_not_running', status.running ? 'the proxy is not running' : status.reason)
  }
  return {
    'proxy.status': async () => rooms.proxy.status(),
    'proxy.start': async () => {
      try {
        await rooms.proxy.start()
      } catch (error) {
        if (error instanceof ProxyConfigError) configRefused(error)
        throw new RpcError('proxy_start_failed', (error as Error).message)
      }
      return rooms.proxy.status()
    },
    'proxy.config': async () => {
      const { config } = running()
      return { path: config.path, text: maskSecret(config.text) }
    },
    'proxy.saveConfig': async ({ text }) => {
      const { config } = running()
      await config.save(restoreSecret(text, config.loaded.config.upstream.secret)).catch(configRefused)
      return rooms.proxy.status()
    },
    'proxy.exchanges': async () => running().exchanges(),
    'proxy.try': async (input) => {
      const service = running()
      const user =
        input.userId === null
          ? null
          : service.config.loaded.config.users.find((candidate) => candidate.id === input.userId)
      if (user === undefined) throw new RpcError('unknown_user', `no user ${input.userId} in the proxy config`)
      return tryProxy(service, user, input)
    },
    'proxy.userToken': async ({ userId }) => userAccessToken(running(), userId)
  }
}
