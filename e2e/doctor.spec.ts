import { readFile } from 'node:fs/promises'
import { har, insert, mustRefetch, shapeHeaders, upToDate, type EntrySpec } from '../test/doctor/har-builder'
import { expect, test } from './fixtures'

test.use({ appArgs: ['--long-poll-timeout', '1500'], viewport: { width: 1400, height: 2000 } })

const TOKEN = 'bearer-token-e2e-0123456789'

/** A browser's HAR of a must-refetch loop on a 409 a CDN cached, with the app's bearer token in every request. */
const LOOP_HAR = har(
  ...[0, 1, 2].flatMap((round): EntrySpec[] => [
    {
      at: round * 1_000,
      params: { offset: '-1', ...(round ? { 'cache-buster': String(round) } : {}) },
      status: 200,
      headers: shapeHeaders('h2', '0_inf', { 'electric-up-to-date': '' }),
      body: [insert(1), upToDate],
      requestHeaders: { authorization: `Bearer ${TOKEN}` }
    },
    {
      at: round * 1_000 + 100,
      params: { offset: '0_inf', handle: 'h2', live: 'true' },
      status: 409,
      headers: { 'electric-handle': 'h3', 'cf-cache-status': 'HIT', age: '40' },
      body: mustRefetch,
      requestHeaders: { authorization: `Bearer ${TOKEN}` }
    }
  ])
)

test('the Sync doctor reads a dropped HAR, names the loop and its cause, and exports a bundle without the token', async ({
  page,
  openApp
}) => {
  await openApp(page, 'doctor')
  await expect(page.getByRole('heading', { name: 'Sync doctor' })).toBeVisible()
  await page
    .getByLabel('HAR file or recording')
    .setInputFiles({ name: 'loop.har', mimeType: 'application/json', buffer: Buffer.from(LOOP_HAR) })
  await expect(page.getByTestId('doctor-summary')).toContainText(
    'loop.har (HAR from test 1) · 6 shape requests · 2 diagnoses (2 errors)'
  )
  const loop = page.getByTestId('finding-doctor.refetch-loop')
  await expect(loop).toContainText('3 must-refetches of one shape (#2, #4, #6): a re-sync loop, caused by a cached 409')
  await expect(loop).toContainText('proxy_cache_valid')
  await expect(page.getByTestId('finding-doctor.cached-conflict')).toContainText('cf-cache-status: HIT')
  await expect(page.getByTestId('request-2')).toContainText('must-refetch')
  await expect(page.getByTestId('request-2')).toContainText('hit')
  await page.screenshot({ path: test.info().outputPath('doctor-loop.png'), fullPage: true })

  const downloading = page.waitForEvent('download')
  await page.getByRole('button', { name: 'Export redacted bundle' }).click()
  const download = await downloading
  expect(download.suggestedFilename()).toBe('loop.redacted.har')
  const bundle = await readFile(await download.path(), 'utf8')
  expect(bundle).not.toContain(TOKEN)
  expect(JSON.parse(bundle).log.entries).toHaveLength(6)
})

test('a file that is not a HAR is refused with what is wrong with it', async ({ page, openApp }) => {
  await openApp(page, 'doctor')
  await page.getByLabel('HAR file or recording').setInputFiles({
    name: 'notes.json',
    mimeType: 'application/json',
    buffer: Buffer.from('{"log": {"entries": [{"request": {}}]}}')
  })
  await expect(page.getByRole('alert')).toContainText(
    'not a HAR 1.2 file the doctor can read: log.entries[0].startedDateTime'
  )
})

test('a shape workbench session is diagnosed from the Sync doctor page', async ({ page, openApp }) => {
  await openApp(page, 'shapes')
  await page.getByLabel('table', { exact: true }).selectOption('projects')
  await page.getByRole('button', { name: 'Start', exact: true }).click()
  await expect(page.getByTestId('phase')).toHaveText('live')
  // a live long-poll the server held to its timeout and answered: what the doctor's note is about
  await page.getByRole('tab', { name: 'Requests & cache' }).click()
  const cell = (name: string) => page.getByRole('cell', { name, exact: true })
  await expect(
    page
      .getByTestId('requests')
      .getByRole('row')
      .filter({ has: cell('long-poll') })
      .filter({ has: cell('200') })
  ).not.toHaveCount(0)
  await page.getByRole('link', { name: 'Sync doctor' }).click()
  await page.getByRole('button', { name: 'Diagnose' }).click()
  await expect(page.getByTestId('doctor-summary')).toContainText(
    /workbench-projects\.json \(Syncscope recording from Syncscope\) · \d+ shape requests · no problem found/
  )
  await expect(page.getByRole('list', { name: 'Notes' })).toContainText('long-polls')
  await page.screenshot({ path: test.info().outputPath('doctor-workbench.png'), fullPage: true })
})
