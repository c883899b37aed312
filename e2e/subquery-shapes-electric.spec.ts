import { test } from './fixtures'
import { subqueryWorkbenchScenario } from './subquery-workbench'

test.use({ appArgs: ['--long-poll-timeout', '2000', '--header-brand', 'electric'] })

test('a subquery shape (electric-* headers): rows show their tags and the project that admits them; the Log marks move-out and move-in', async ({
  page,
  openApp
}) => {
  // Two moves of 75 rows each and a look at every view: more than the default minute on a loaded machine.
  test.setTimeout(180_000)
  await subqueryWorkbenchScenario(page, openApp)
})
