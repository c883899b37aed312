import { spawn } from 'node:child_process'
import { userInfo } from 'node:os'
import { basename } from 'node:path'
import { endGroup } from './process-group'

export interface LoginPath {
  /** The PATH stdio servers are started with. */
  path: string | undefined
  /** Why it is not the login shell's (the current PATH is used instead), for the server's state. */
  warning: string | null
}

const START = '__SYNCSCOPE_PATH_START__'
const END = '__SYNCSCOPE_PATH_END__'
const TIMEOUT_MS = 5_000

function userShell(env: NodeJS.ProcessEnv): string {
  if (env.SHELL) return env.SHELL
  try {
    return userInfo().shell ?? '/bin/sh'
  } catch {
    return '/bin/sh'
  }
}

/**
 * The PATH of the user's login shell (`$SHELL -ilc`): an app started from the dock or a desktop menu gets a minimal
 * PATH, without what the shell's rc files add (nvm, Homebrew, ~/.local/bin), and `npx` would not be found. The output
 * is read between markers, so whatever the rc files print is ignored; a shell that fails or takes longer than
 * `timeoutMs` leaves the current PATH, with a warning.
 */
export function readLoginPath(env: NodeJS.ProcessEnv = process.env, timeoutMs = TIMEOUT_MS): Promise<LoginPath> {
  const fallback = (why: string): LoginPath => ({
    path: env.PATH,
    warning: `the login shell's PATH is unknown (${why}); servers start with the app's PATH ${env.PATH ?? '(none)'}`
  })
  if (process.platform === 'win32') return Promise.resolve({ path: env.PATH, warning: null })
  const shell = userShell(env)
  const value = basename(shell) === 'fish' ? '(string join : $PATH)' : '"$PATH"'
  return new Promise((resolve) => {
    // its own session and group: no terminal for the interactive shell to take, and a hung one ends with all it started
    const child = spawn(shell, ['-ilc', `printf '${START}%s${END}' ${value}`], {
      env,
      stdio: ['ignore', 'pipe', 'ignore'],
      detached: true
    })
    let out = ''
    let settled = false
    const finish = (result: LoginPath) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      void endGroup(child.pid, 200).then(() => resolve(result))
    }
    const timer = setTimeout(() => finish(fallback(`${shell} -ilc did not answer within ${timeoutMs} ms`)), timeoutMs)
    const printed = () => {
      const start = out.indexOf(START)
      const end = start < 0 ? -1 : out.indexOf(END, start)
      return end < 0 ? null : out.slice(start + START.length, end)
    }
    // done once the markers are in: something the rc files started in the background may hold stdout open
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const path = printed()
      if (path) finish({ path: withAppPath(path, env.PATH), warning: null })
    })
    child.once('error', (error) => finish(fallback(`${shell}: ${error.message}`)))
    child.once('exit', (code) =>
      setTimeout(() => finish(fallback(`${shell} -ilc exited with ${code} without printing it`)), 100)
    )
  })
}

/** The login shell's folders first; folders only the app's PATH has (a terminal's own additions) after them. */
function withAppPath(login: string, app: string | undefined): string {
  const folders = login.split(':').filter(Boolean)
  for (const folder of (app ?? '').split(':')) if (folder && !folders.includes(folder)) folders.push(folder)
  return folders.join(':')
}

let cached: Promise<LoginPath> | null = null

/** The login shell's PATH, read once per process. */
export function loginPath(): Promise<LoginPath> {
  cached ??= readLoginPath()
  return cached
}
