import type { Page } from '@playwright/test'
import { expect, test } from './fixtures'

// Demo data: project 1000000000+i is archived when i % 9 = 0; each project has 75 issues.
const WHERE = 'project_id IN (SELECT id FROM projects WHERE NOT archived AND id <= $1)'
export const shot = (page: Page, name: string) =>
  page.screenshot({ path: test.info().outputPath(`${name}.png`), fullPage: true })
const tab = (page: Page, name: string) => page.getByRole('tab', { name }).click()

export async function composeIssues(page: Page, where: string, params: string[]) {
  await page.getByLabel('table', { exact: true }).selectOption('issues')
  await page.getByLabel('where', { exact: true }).fill(where)
  for (const [index, value] of params.entries()) {
    await page.getByRole('button', { name: 'Add param' }).click()
    await page.getByLabel(`param ${index + 1}`, { exact: true }).fill(value)
  }
  await page.getByRole('button', { name: 'Start', exact: true }).click()
}

async function runSql(page: Page, sql: string) {
  await page.getByLabel('SQL', { exact: true }).fill(sql)
  await page.getByRole('button', { name: /^Run/ }).click()
  await expect(page.getByTestId('sql-results')).toContainText('UPDATE')
}

/**
 * Issues of projects 1–3 through a subquery: each row's tags and the project that admits it; archiving project 2 moves
 * its 75 issues out, un-archiving moves them back in; the Log marks both moves.
 */
export async function subqueryWorkbenchScenario(page: Page, openApp: (page: Page, pageId?: string) => Promise<void>) {
  await openApp(page, 'shapes')
  await composeIssues(page, WHERE, ['1000000003'])
  await expect(page.getByTestId('row-count')).toHaveText('225 rows')
  await expect(page.getByTestId('phase')).toHaveText('live')
  await expect(page.getByTestId('in-by').first()).toHaveText('#1')

  const rows = page.getByRole('table', { name: 'Shape rows' })
  await rows.locator('[role="row"][data-key]').first().click()
  const why = page.getByTestId('row-why')
  await expect(why.getByTestId('row-tags')).toContainText('#1')
  await expect(why.getByTestId('row-tags')).toContainText('→ true')
  await expect(why.getByTestId('admission')).toContainText(
    'admitted by 1 projects row(s) selecting project_id = 100000000'
  )
  await expect(why.getByTestId('admitting-rows')).toContainText(/Project [123]/)
  await shot(page, 'subquery-row-why')

  await runSql(page, 'UPDATE projects SET archived = true WHERE id = 1000000002')
  await expect(page.getByTestId('row-count')).toHaveText('150 rows')
  await runSql(page, 'UPDATE projects SET archived = false WHERE id = 1000000002')
  await expect(page.getByTestId('row-count')).toHaveText('225 rows')

  await tab(page, 'Log')
  await page.getByRole('button', { name: 'moves', exact: true }).click()
  const log = page.getByTestId('log')
  await expect(log.locator('tr[data-op="move-out"]')).toHaveCount(1)
  await expect(log.locator('tr[data-op="move-out"]')).toContainText('removed 75 rows here')
  await expect(log.locator('tr[data-op="move-in"]')).toHaveCount(1)
  await expect(log.locator('tr[data-op="insert"][data-move]').first()).toContainText('move-in')
  // the Log draws a window of its entries: its count says how many the filter and the search hold
  await expect(page.getByTestId('log-count')).toHaveText(/^77 shown of \d+$/)
  await page.getByLabel('search the log').fill('"is_move_in":true')
  await expect(page.getByTestId('log-count')).toHaveText(/^75 shown of/)
  await expect(log.locator('tr[data-op]:not([data-op="insert"][data-move])')).toHaveCount(0)
  await shot(page, 'subquery-log-moves')
}
