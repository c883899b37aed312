import { join } from 'node:path'
import { _electron as electron, expect, test } from '@playwright/test'
import { needFacilities } from './facilities'

test.describe('Electron shell', () => {
  test.beforeEach(() => needFacilities(['electron']))

  test('opens one secure window with the Database view', async () => {
    const app = await electron.launch({ args: [join(__dirname, '..')], env: { ...process.env, SYNCSCOPE_PORT: '0' } })
    const window = await app.firstWindow()
    await expect(window.getByRole('heading', { name: 'Database' })).toBeVisible()
    expect(await app.evaluate(({ BrowserWindow }) => BrowserWindow.getAllWindows().length)).toBe(1)
    const exposed = await window.evaluate(() => ({
      require: typeof (window as unknown as { require?: unknown }).require,
      process: typeof (window as unknown as { process?: unknown }).process,
      bridge: Object.keys((window as unknown as { syncscope: object }).syncscope).sort()
    }))
    expect(exposed).toEqual({ require: 'undefined', process: 'undefined', bridge: ['call', 'subscribe'] })
    await expect(
      window.evaluate(() => (globalThis as unknown as { open(url: string): unknown }).open('https://example.com'))
    ).resolves.toBeNull()
    await app.close()
  })
})
