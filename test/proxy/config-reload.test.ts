import { readFile, writeFile } from 'node:fs/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ProxyConfigError } from '../../src/main/proxy/config'
import { bearer, configFor, grant, GRACE, startProxyStack, until, type ProxyStack } from './support'

let stack: ProxyStack
beforeAll(async () => {
  stack = await startProxyStack()
})
afterAll(() => stack?.close())

const statusOf = async (path: string) =>
  (await fetch(`${stack.proxy.url}${path}`, { headers: bearer(await stack.accessToken(GRACE)) })).status

describe('proxy config hot reload', () => {
  it('applies a changed file to the next request', async () => {
    expect(await statusOf('/api/shapes/people?offset=-1')).toBe(404)
    const config = configFor(stack.shapes) as { shapes: Record<string, unknown> }
    await stack.writeConfig({
      ...config,
      shapes: { ...config.shapes, people: { table: 'users', columns: ['id', 'name'] } }
    })
    await until(async () => (await statusOf('/api/shapes/people?offset=-1')) === 200, 'the new shape')
    expect(stack.proxy.config.status().error).toBeNull()
  })

  it('keeps the previous config in force when the file turns bad, says why, and recovers when it is fixed', async () => {
    const good = await readFile(stack.configPath, 'utf8')
    const loadedAt = stack.proxy.config.status().loadedAt
    await writeFile(stack.configPath, good.replace('"owner_id = $1"', '"owner_id = $1 OR"'))
    await until(() => stack.proxy.config.status().error !== null, 'the reload error')
    const { error } = stack.proxy.config.status()
    expect(error?.issues[0]?.path).toEqual(['shapes', 'my-issues', 'rowFilter', 'where'])
    expect(error?.message).toMatch(/^shapes\.my-issues\.rowFilter\.where: /)
    expect(stack.proxy.config.status().loadedAt).toBe(loadedAt)
    expect(await statusOf('/api/shapes/my-issues?offset=-1')).toBe(200)
    expect(stack.proxy.config.text).toBe(good)

    await writeFile(stack.configPath, '{ "users": [ ')
    await until(() => stack.proxy.config.status().error?.message.includes('not valid JSON') === true, 'the JSON error')
    expect(await statusOf('/api/shapes/people?offset=-1')).toBe(200)

    await writeFile(stack.configPath, good)
    await until(() => stack.proxy.config.status().error === null, 'recovery')
    expect(stack.proxy.config.status().loadedAt).not.toBe(loadedAt)
  })

  it('refuses to save a bad config and leaves the file as it was', async () => {
    const before = await readFile(stack.configPath, 'utf8')
    await expect(stack.proxy.config.save('{"gatekeeper":{"algorithm":"none"}}')).rejects.toBeInstanceOf(
      ProxyConfigError
    )
    expect(await readFile(stack.configPath, 'utf8')).toBe(before)
    const config = JSON.parse(before) as { gatekeeper: object }
    const edited = JSON.stringify(
      {
        ...config,
        cors: { origins: ['http://ui.test'] },
        gatekeeper: { ...config.gatekeeper, proxyUrl: 'https://edge.example/base' }
      },
      null,
      2
    )
    await stack.proxy.config.save(edited)
    expect(stack.proxy.config.loaded.config.cors.origins).toEqual(['http://ui.test'])
    expect(await readFile(stack.configPath, 'utf8')).toBe(edited)
    expect((await grant(stack, GRACE)).url).toBe('https://edge.example/base/proxy/v1/shape')
  })
})
