import { expect, test } from './fixtures'
import { composeIssues, shot, subqueryWorkbenchScenario } from './subquery-workbench'

test.use({ appArgs: ['--long-poll-timeout', '2000', '--header-brand', 'service'] })

test('a subquery shape (service-* headers): rows show their tags and the project that admits them; the Log marks move-out and move-in', async ({
  page,
  openApp
}) => {
  // Two moves of 75 rows each and a look at every view: more than the default minute on a loaded machine.
  test.setTimeout(180_000)
  await subqueryWorkbenchScenario(page, openApp)
})

test('shows the server’s error for a subquery it does not support in the where editor', async ({ page, openApp }) => {
  await openApp(page, 'shapes')
  await composeIssues(page, 'project_id = ANY (SELECT id FROM projects)', [])
  await expect(page.getByTestId('where-error')).toContainText(
    'only `value IN (SELECT ...)` sublinks are supported right now'
  )
  await expect(page.getByTestId('row-count')).toHaveText('0 rows')
  await shot(page, 'subquery-where-error')
})
