// An ESLint rule: which room of src/main may import which (`syncscope/room-imports`). A room is a folder of src/main;
// it may import src/shared, itself and the rooms ROOM_IMPORTS lists for it. The files directly in src/main (app, core,
// rooms, cli, index, …) wire the rooms together and may import any of them. Inside a room that STAGES orders, a stage
// (a folder of the room, or `@name` for a file directly in it) imports only itself and the stages below it: type
// imports count too. Keep ROOM_IMPORTS and STAGES in step with docs/architecture.md.
import { statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'

/** room → the rooms (folders of src/main) and wiring files (`@name`, a file directly in src/main) it may import. */
export const ROOM_IMPORTS = {
  checker: [],
  cli: ['checker', 'db', 'doctor', 'fs', 'mcp', 'net', 'settings', 'shapes', 'timetravel', '@data-dir'],
  db: ['fs', 'net', 'sql', '@data-dir', '@resources'],
  doctor: ['checker', 'fs', 'net'],
  electron: ['headless', 'mcp', 'net', 'rpc', '@csp', '@events'],
  fs: [],
  headless: ['net', 'rpc', '@csp', '@events'],
  mcp: ['fs', 'net', '@room-context'],
  net: [],
  proxy: ['fs', 'net', 'shapes', 'sql', '@resources', '@room-context'],
  rpc: ['checker', 'db', 'doctor', 'mcp', 'proxy', 'settings', 'timetravel', 'workbench', '@core', '@rooms'],
  settings: ['net', 'shapes', '@data-dir'],
  shapes: ['db', 'fs', 'net', 'sql', '@room-context'],
  sql: [],
  timetravel: ['db', 'doctor', 'shapes', 'sql'],
  workbench: ['fs', 'shapes', 'sql']
}

/**
 * room → its stages, lowest first; the stages of one level (replication and live) import neither each other nor
 * anything of their own level. The shape server's pipeline: a definition is resolved, its snapshot built into storage,
 * subqueries followed beside it, replication and the live stage move it on, http answers.
 */
export const STAGES = {
  shapes: [
    ['definition', '@commit-times'],
    ['storage'],
    ['snapshot'],
    ['subquery'],
    ['replication', 'live'],
    ['@registry'],
    ['@service'],
    ['@server-state'],
    ['http'],
    ['@room']
  ]
}

/** The level of each stage of each ordered room. */
const STAGE_LEVELS = Object.fromEntries(
  Object.entries(STAGES).map(([room, levels]) => [
    room,
    new Map(levels.flatMap((stages, level) => stages.map((stage) => [stage, level])))
  ])
)

/** The stage of a path inside `room` (a folder of it, or `@file` directly in it). */
function stageOf(mainDir, room, path) {
  const [first, ...rest] = relative(join(mainDir, room), path).split(sep)
  return rest.length === 0 ? `@${first.replace(/\.tsx?$/, '')}` : first
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
        'src/main/{{from}}/ may not import {{target}} (allowed: {{allowed}}); see ROOM_IMPORTS in scripts/eslint-room-imports.mjs',
      upward:
        'src/main/{{room}}/: stage {{from}} may not import stage {{target}} (a stage imports only those below it); see STAGES in scripts/eslint-room-imports.mjs',
      unordered: 'src/main/{{room}}/: stage {{stage}} has no place in STAGES (scripts/eslint-room-imports.mjs)'
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
      const file = statSync(path, { throwIfNoEntry: false })?.isDirectory() ? join(path, 'index') : path
      const target = roomOf(mainDir, file)
      if (target === from) return checkStage(node, file)
      if (target === null || allowed.includes(target)) return
      const named = target.startsWith('@') ? `src/main/${target.slice(1)}` : `src/main/${target}/`
      context.report({
        node,
        messageId: 'forbidden',
        data: { from, target: named, allowed: allowed.length > 0 ? allowed.join(', ') : 'none' }
      })
    }
    const levels = STAGE_LEVELS[from]
    const ownStage = levels && stageOf(mainDir, from, context.filename)
    const checkStage = (node, file) => {
      if (!levels) return
      const stage = stageOf(mainDir, from, file)
      if (stage === ownStage) return
      for (const unknown of [ownStage, stage].filter((name) => !levels.has(name)))
        return context.report({ node, messageId: 'unordered', data: { room: from, stage: unknown } })
      if (levels.get(stage) < levels.get(ownStage)) return
      context.report({ node, messageId: 'upward', data: { room: from, from: ownStage, target: stage } })
    }
    return {
      ImportDeclaration: (node) => check(node.source, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node.source, node.source.value),
      ExportAllDeclaration: (node) => check(node.source, node.source.value),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node.source, node.source.value)
    }
  }
}
