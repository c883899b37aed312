import { execFileSync } from 'node:child_process'
import { accessSync, constants, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { delimiter, join, resolve } from 'node:path'
import type { BrowserType } from 'playwright-core'

/**
 * What tests need from the machine besides Node and the npm packages, detected in this one place. A runner declares
 * what it installed in SYNCSCOPE_REQUIRE (comma-separated names; `.ci/run` sets it): a test whose facility is declared
 * but missing fails with one line naming it; where it is not declared, the test is skipped with the reason.
 */
const FACILITIES = {
  nginx: () => (onPath('nginx') ? null : 'nginx is not on PATH (apt-get install nginx; Debian puts it in /usr/sbin)'),
  chromium: () =>
    chromiumPath
      ? null
      : 'no Chromium: not on PATH, no CHROMIUM_PATH, no Playwright download (apt-get install chromium)',
  dbus: () => (onPath('dbus-daemon') ? null : 'dbus-daemon is not on PATH (apt-get install dbus dbus-x11)'),
  keyring: () => {
    const missing = ['gnome-keyring-daemon', 'secret-tool'].filter((binary) => !onPath(binary))
    return missing.length ? `${missing.join(', ')} not on PATH (apt-get install gnome-keyring libsecret-tools)` : null
  },
  tmpfs: () => canMountTmpfs(),
  root: () => (process.getuid?.() === 0 ? null : 'not running as root'),
  linux: () => (process.platform === 'linux' ? null : `this is ${process.platform}, not Linux`),
  electron: () =>
    existsSync(resolve(__dirname, '../../node_modules/electron/path.txt'))
      ? null
      : 'the Electron binary is not installed (node_modules/electron/path.txt is missing; it cannot be downloaded here)'
} satisfies Record<string, () => string | null>

export type Facility = keyof typeof FACILITIES
export const FACILITY_NAMES = Object.keys(FACILITIES) as Facility[]

/** The executable `name` as the first directory of PATH holding it gives it, or null. */
export function onPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const path = join(dir || '.', name)
    try {
      accessSync(path, constants.X_OK)
      return path
    } catch {
      // not in this directory
    }
  }
  return null
}

/** Playwright's own Chromium (`npx playwright install chromium`) where it was downloaded. */
function managedChromium(): string | null {
  try {
    const { chromium } = createRequire(__filename)('playwright-core') as { chromium: BrowserType }
    return existsSync(chromium.executablePath()) ? chromium.executablePath() : null
  } catch {
    return null
  }
}

/** Chromium for Playwright: CHROMIUM_PATH, else `chromium` on PATH (Debian's /usr/bin/chromium), else Playwright's own. */
export const chromiumPath: string | undefined =
  (process.env.CHROMIUM_PATH && existsSync(process.env.CHROMIUM_PATH) ? process.env.CHROMIUM_PATH : null) ??
  onPath('chromium') ??
  managedChromium() ??
  undefined

function canMountTmpfs(): string | null {
  const dir = mkdtempSync(join(tmpdir(), 'syncscope-tmpfs-probe-'))
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { stdio: 'pipe' })
    execFileSync('umount', [dir], { stdio: 'pipe' })
    return null
  } catch (error) {
    const stderr = String((error as { stderr?: Buffer }).stderr ?? '').trim()
    return `cannot mount a tmpfs (${stderr || (error as Error).message})`
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The facilities SYNCSCOPE_REQUIRE declares; an unknown name is an error, not a requirement quietly dropped. */
export function declaredFacilities(value = process.env.SYNCSCOPE_REQUIRE ?? ''): Set<Facility> {
  const names = value
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean)
  const unknown = names.filter((name) => !(name in FACILITIES))
  if (unknown.length)
    throw new Error(
      `SYNCSCOPE_REQUIRE names unknown facilities: ${unknown.join(', ')} (known: ${FACILITY_NAMES.join(', ')})`
    )
  return new Set(names as Facility[])
}

const detected = new Map<Facility, string | null>()

/** Why `facility` is missing here, or null when it is present (detected once per process). */
export function missingReason(facility: Facility): string | null {
  if (!detected.has(facility)) detected.set(facility, FACILITIES[facility]())
  return detected.get(facility) ?? null
}

export type Availability =
  | { kind: 'present' }
  /** Missing and declared: the test fails with this error. */
  | { kind: 'required'; error: Error }
  /** Missing and not declared: the test is skipped; `title` is the test's title with the reason. */
  | { kind: 'skipped'; reason: string }

/** Whether tests needing all of `facilities` run, fail (declared but missing) or are skipped. */
export function availability(facilities: Facility[], declared = declaredFacilities()): Availability {
  const missing = facilities.flatMap((facility) => {
    const reason = missingReason(facility)
    return reason === null ? [] : [{ facility, reason }]
  })
  const required = missing.filter(({ facility }) => declared.has(facility))
  if (required.length) {
    const error = new Error(
      required
        .map(({ facility, reason }) => `missing facility ${facility} (declared in SYNCSCOPE_REQUIRE): ${reason}`)
        .join('; ')
    )
    // the one line is the whole story: where the test asked for it adds nothing
    error.stack = `${error.name}: ${error.message}`
    return { kind: 'required', error }
  }
  if (missing.length) return { kind: 'skipped', reason: missing.map(({ reason }) => reason).join('; ') }
  return { kind: 'present' }
}

/** The title of a group or test skipped for `reason` (test.mjs lists skips by this suffix). */
export const skippedTitle = (title: string, reason: string): string => `${title} — skipped: ${reason}`
