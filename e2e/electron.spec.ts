import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { _electron as electron, expect, test } from '@playwright/test'

const electronInstalled = existsSync(join(__dirname, '..', 'node_modules', 'electron', 'path.txt'))

test.describe('Electron shell', () => {
  test.skip(!electronInstalled, 'the Electron binary is not installed here (node_modules/electron/path.txt is missing; it cannot be downloaded on this machine)')

  test('opens one secure window with the Database view', async () => {
    const app = await electron.launch({ args: [join(__dirname, '..')], env: { ...process.env, SYNCSCOPE_PORT: '0' } })
    const window = await app.firstWindow()
    await expect(window.getByRole('heading', { name: 'Database' })).toBeVisible()
    const preferences = await app.evaluate(({ BrowserWindow }) => {
      const [only] = BrowserWindow.getAllWindows()
      const prefs = only?.webContents.getLastWebPreferences()
      return { count: BrowserWindow.getAllWindows().length, contextIsolation: prefs?.contextIsolation, sandbox: prefs?.sandbox, nodeIntegration: prefs?.nodeIntegration }
    })
    expect(preferences).toEqual({ count: 1, contextIsolation: true, sandbox: true, nodeIntegration: false })
    expect(await window.evaluate(() => typeof (window as unknown as { require?: unknown }).require)).toBe('undefined')
    await app.close()
  })
})
