// An ESLint rule: which room of src/main may import which (`syncscope/room-imports`). A room is a folder of src/main;
// it may import src/shared, itself and the rooms ROOM_IMPORTS lists for it. The files directly in src/main (app, core,
// rooms, cli, index, …) wire the rooms together and may import any of them. Keep ROOM_IMPORTS in step with
// docs/architecture.md.
import { statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'

/** room → the rooms (folders of src/main) and wiring files (`@name`, a file directly in src/main) it may import. */
export const ROOM_IMPORTS = {
  checker: [],
  cli: ['checker', 'db', 'doctor', 'fs', 'mcp', 'net', 'shapes', '@data-dir'],
  db: ['fs', 'net', 'sql', '@data-dir', '@resources'],
  doctor: ['checker', 'fs', 'headless', 'net'],
  electron: ['headless', 'mcp', 'net', 'rpc', '@csp', '@events'],
  fs: [],
  headless: ['net', 'rpc', '@csp', '@events'],
  mcp: ['fs', 'net', '@rooms'],
  net: [],
  proxy: ['fs', 'headless', 'net', 'shapes', 'sql', '@resources', '@rooms'],
  rpc: ['checker', 'cli', 'db', 'doctor', 'mcp', 'proxy', 'workbench', '@core', '@rooms'],
  shapes: ['db', 'fs', 'headless', 'net', 'sql', '@rooms'],
  sql: [],
  workbench: ['fs', 'shapes', 'sql']
}

/** The room of a path under src/main: its folder, or `@file` for a file directly in src/main; null elsewhere. */
function roomOf(mainDir, path) {
  const inside = relative(mainDir, path)
  if (inside.startsWith('..') || inside === '') return null
  const [first, ...rest] = inside.split(sep)
  return rest.length === 0 ? `@${first.replace(/\.tsx?$/, '')}` : first
}

export const roomImports = {
  meta: {
    type: 'problem',
    docs: { description: 'a room of src/main imports only src/shared, itself and the rooms ROOM_IMPORTS allows it' },
    schema: [],
    messages: {
      forbidden:
        'src/main/{{from}}/ may not import {{target}} (allowed: {{allowed}}); see ROOM_IMPORTS in scripts/eslint-room-imports.mjs'
    }
  },
  create(context) {
    const mainDir = resolve(context.cwd, 'src', 'main')
    const from = roomOf(mainDir, context.filename)
    if (from === null || from.startsWith('@')) return {}
    const allowed = ROOM_IMPORTS[from] ?? []
    const check = (node, specifier) => {
      if (typeof specifier !== 'string' || !specifier.startsWith('.')) return
      const path = resolve(dirname(context.filename), specifier)
      // a folder's import (`../sql`) is of its index, inside the room
      const target = roomOf(
        mainDir,
        statSync(path, { throwIfNoEntry: false })?.isDirectory() ? join(path, 'index') : path
      )
      if (target === null || target === from || allowed.includes(target)) return
      const named = target.startsWith('@') ? `src/main/${target.slice(1)}` : `src/main/${target}/`
      context.report({
        node,
        messageId: 'forbidden',
        data: { from, target: named, allowed: allowed.length > 0 ? allowed.join(', ') : 'none' }
      })
    }
    return {
      ImportDeclaration: (node) => check(node.source, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node.source, node.source.value),
      ExportAllDeclaration: (node) => check(node.source, node.source.value),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node.source, node.source.value)
    }
  }
}
