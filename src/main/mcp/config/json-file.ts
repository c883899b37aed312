import { readFile, stat } from 'node:fs/promises'
import { writeAtomically } from '../../fs/atomic-write'

type JsonObject = Record<string, unknown>

/**
 * Why a text is not JSON, with where (line and column when the parser says) but never a piece of the text: the
 * parser's own message quotes the file's first characters, and the file may be anyone's (`/etc/shadow`, a key).
 */
export function jsonSyntaxProblem(error: unknown): string {
  const message = (error as Error).message
  const at = /\(line (\d+) column (\d+)\)/.exec(message)
  const position = /at position (\d+)/.exec(message)
  if (at) return `is not valid JSON (line ${at[1]}, column ${at[2]})`
  if (position) return `is not valid JSON (at character ${position[1]})`
  return message.includes('end of JSON input') ? 'is not valid JSON (it ends too early)' : 'is not valid JSON'
}

/** The indentation a person used (tabs, 2 or 4 spaces…), so a rewrite looks like their file. */
function indentOf(text: string): string | number {
  const match = /^([ \t]+)"/m.exec(text)
  return match?.[1] ?? 2
}

/** A JSON text as it was read, with what a rewrite keeps of it. */
export interface JsonText {
  text: string
  mode: number
}

/** The file's text and mode; a missing file reads as empty (mode 0600 for the file that will be created). */
export async function readJsonText(path: string): Promise<JsonText> {
  try {
    return { text: await readFile(path, 'utf8'), mode: (await stat(path)).mode & 0o777 }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    return { text: '', mode: 0o600 }
  }
}

/** The text after `update`: key order, indentation and the final newline are kept. A text that is not JSON is refused. */
export function editJsonText(path: string, text: string, update: (root: JsonObject) => void): string {
  let root: unknown = {}
  if (text.trim() !== '') {
    try {
      root = JSON.parse(text)
    } catch (error) {
      throw new Error(`${path} ${jsonSyntaxProblem(error)}; fix it by hand before saving from the app`, {
        cause: error
      })
    }
  }
  if (!root || typeof root !== 'object' || Array.isArray(root)) throw new Error(`${path} does not hold a JSON object`)
  update(root as JsonObject)
  const newline = text === '' || text.endsWith('\n') ? '\n' : ''
  return JSON.stringify(root, null, indentOf(text)) + newline
}

/**
 * Read-modify-write of a JSON config file: key order, indentation and the final newline are kept, the write is atomic
 * and keeps the file's mode. A file that is not valid JSON is never overwritten. Resolves with the text written.
 */
export async function updateJsonFile(path: string, update: (root: JsonObject) => void): Promise<string> {
  const { text, mode } = await readJsonText(path)
  const after = editJsonText(path, text, update)
  await writeAtomically(path, after, mode)
  return after
}

/** The object at `keys`, created on the way when missing. */
export function objectAt(root: JsonObject, keys: string[]): JsonObject {
  let node = root
  for (const key of keys) {
    const next = node[key]
    if (!next || typeof next !== 'object' || Array.isArray(next)) node[key] = {}
    node = node[key] as JsonObject
  }
  return node
}

/** Sets `name` in a map, in the place `previousName` had (a rename keeps the entry's position). */
export function putEntry(map: JsonObject, name: string, value: unknown, previousName?: string): void {
  if (!previousName || previousName === name || !(previousName in map)) {
    map[name] = value
    return
  }
  const entries = Object.entries(map).filter(([key]) => key !== name)
  for (const key of Object.keys(map)) delete map[key]
  for (const [key, existing] of entries)
    map[key === previousName ? name : key] = key === previousName ? value : existing
}
