import { readFile, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { encode } from 'gpt-tokenizer/encoding/o200k_base'
import { test, expect } from './fixtures'

const MANY_TOOLS = resolve(__dirname, '../test/mcp/support/many-tools-fixture.mjs')
const EVERYTHING = resolve(__dirname, '../node_modules/@modelcontextprotocol/server-everything/dist/index.js')

interface Budget {
  tools: Array<{ tool: string; tokens: number; serialized: string; exposed: boolean }>
  total: { tools: number; tokens: number }
  exposed: { tools: number; tokens: number }
}

test('tool budget: per-server totals, a sortable per-tool table with shares, and ticks that edit the filter', async ({
  page,
  openApp,
  app
}) => {
  const settingsFile = join(app.dataDir, 'settings.json')
  await writeFile(
    settingsFile,
    JSON.stringify({
      mcp: {
        servers: {
          many: { transport: 'stdio', command: process.execPath, args: [MANY_TOOLS], env: { FIXTURE_TOOLS: '40' } },
          everything: { transport: 'stdio', command: process.execPath, args: [EVERYTHING, 'stdio'] }
        }
      }
    })
  )
  const filterOf = async () =>
    (JSON.parse(await readFile(settingsFile, 'utf8')) as { mcp: { servers: { many: { tools?: unknown } } } }).mcp
      .servers.many.tools
  await openApp(page, 'mcp')
  const overview = page.getByTestId('mcp-budget-overview')
  await expect(overview.getByTestId('mcp-budget-measure-many')).toContainText('starts the server')
  await expect(page.getByTestId('mcp-budget-tokenizer')).toContainText('o200k_base (gpt-tokenizer 4.0.0)')
  await expect(page.getByTestId('mcp-budget-tokenizer')).toContainText('approximation')

  // measuring lists the tools; the page's numbers are the tokenizer's count of each definition as sent, summed
  await overview.getByTestId('mcp-budget-measure-everything').click()
  await overview.getByTestId('mcp-budget-measure-many').click()
  const budget = await app.call<Budget>('mcp.toolBudget', { name: 'many' })
  const sum = budget.tools.reduce((total, tool) => total + encode(tool.serialized).length, 0)
  expect(budget.total).toEqual({ tools: 44, tokens: sum })
  await expect(overview.getByTestId('mcp-budget-row-many')).toContainText('44 of 44')
  await expect(overview.getByTestId('mcp-budget-exposed-many')).toHaveText(sum.toLocaleString('en'))
  const everything = await app.call<Budget>('mcp.toolBudget', { name: 'everything' })
  await expect(overview.getByTestId('mcp-budget-tools-sum')).toHaveText(String(44 + everything.total.tools))
  // sortable: by server name, then by exposed tokens again
  await overview.getByTestId('sort-server').click()
  await overview.getByTestId('sort-server').click()
  await expect(overview.locator('tbody tr').first()).toHaveAttribute('data-testid', 'mcp-budget-row-everything')

  await overview.getByRole('button', { name: 'many' }).click()
  const table = page.getByTestId('mcp-tool-budget')
  await expect(page.getByTestId('mcp-budget-summary')).toContainText('44 of 44 tools')
  const readFileCost = budget.tools.find((tool) => tool.tool === 'read_file')!.tokens
  await expect(table.getByTestId('mcp-budget-tokens-read_file')).toHaveText(String(readFileCost))

  // the share follows the context window typed in
  await page.getByTestId('mcp-budget-window').fill('1000')
  await expect(page.getByTestId('mcp-budget-summary')).toContainText(
    `${((sum * 100) / 1000).toFixed(2)}% of a 1,000-token context window`
  )

  // unticking one tool denies it by name; "Expose none" and one tick leave an allow list of that tool
  await table.getByTestId('mcp-budget-check-delete_everything').click()
  await expect(page.getByTestId('mcp-budget-summary')).toContainText('43 of 44 tools')
  expect(await filterOf()).toEqual({ deny: ['delete_everything'] })
  await page.getByTestId('mcp-budget-expose-none').click()
  await expect(page.getByTestId('mcp-budget-summary')).toContainText('0 of 44 tools')
  await table.getByTestId('mcp-budget-check-read_file').click()
  await expect(page.getByTestId('mcp-budget-summary')).toContainText(`1 of 44 tools: ${readFileCost} tokens`)
  expect(await filterOf()).toEqual({ allow: ['read_file'] })
  await expect(overview.getByTestId('mcp-budget-row-many')).toContainText('1 of 44')

  // sort the tools by name: hidden and exposed alike, in order
  await table.getByTestId('sort-name').click()
  await table.getByTestId('sort-name').click()
  await expect(table.locator('tbody tr').first()).toHaveAttribute('data-testid', 'mcp-budget-tool-delete_everything')
  await page.screenshot({ path: test.info().outputPath('mcp-tool-budget.png'), fullPage: true })

  await page.getByTestId('mcp-budget-expose-all').click()
  await expect(page.getByTestId('mcp-budget-summary')).toContainText('44 of 44 tools')
  expect(await filterOf()).toBeUndefined()
})
