#!/usr/bin/env node
// Import cycles among the TypeScript sources (run by `npm run lint`): each cycle printed as the files it goes through.
// Only imports that exist at run time count: `import type …` and imports whose every name is `type` are erased.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const sourceRoots = process.argv.length > 2 ? process.argv.slice(2).map((path) => resolve(path)) : [join(root, 'src')]

function sourceFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sourceFiles(path)
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [path] : []
  })
}

function resolveImport(from, specifier) {
  if (!specifier.startsWith('.')) return null
  const base = resolve(dirname(from), specifier)
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts'), join(base, 'index.tsx')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate
  }
  return null
}

function erased(node) {
  const clause = node.importClause ?? null
  if (ts.isImportDeclaration(node)) {
    if (!clause) return false // `import './x'` runs x
    if (clause.isTypeOnly) return true
    const bindings = clause.namedBindings
    return (
      !clause.name &&
      bindings !== undefined &&
      ts.isNamedImports(bindings) &&
      bindings.elements.length > 0 &&
      bindings.elements.every((element) => element.isTypeOnly)
    )
  }
  if (node.isTypeOnly) return true
  const exports = node.exportClause
  return (
    exports !== undefined &&
    ts.isNamedExports(exports) &&
    exports.elements.length > 0 &&
    exports.elements.every((element) => element.isTypeOnly)
  )
}

function runtimeImports(file) {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false)
  const found = []
  const visit = (node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier) &&
      !erased(node)
    ) {
      found.push(node.moduleSpecifier.text)
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push(node.arguments[0].text)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found.map((specifier) => resolveImport(file, specifier)).filter((target) => target !== null)
}

const graph = new Map(sourceRoots.flatMap(sourceFiles).map((file) => [file, runtimeImports(file)]))

// Tarjan's strongly connected components: every component of more than one file (or a file importing itself) is a cycle.
const index = new Map()
const low = new Map()
const stack = []
const onStack = new Set()
const components = []
let counter = 0
function connect(file) {
  index.set(file, counter)
  low.set(file, counter)
  counter += 1
  stack.push(file)
  onStack.add(file)
  for (const next of graph.get(file) ?? []) {
    if (!graph.has(next)) continue
    if (!index.has(next)) {
      connect(next)
      low.set(file, Math.min(low.get(file), low.get(next)))
    } else if (onStack.has(next)) low.set(file, Math.min(low.get(file), index.get(next)))
  }
  if (low.get(file) !== index.get(file)) return
  const component = []
  let member
  do {
    member = stack.pop()
    onStack.delete(member)
    component.push(member)
  } while (member !== file)
  if (component.length > 1 || (graph.get(file) ?? []).includes(file)) components.push(component)
}
for (const file of graph.keys()) if (!index.has(file)) connect(file)

/** One concrete cycle through a component, shortest from its first file, for the message. */
function cycleThrough(component) {
  const members = new Set(component)
  const start = [...component].sort()[0]
  const previous = new Map([[start, null]])
  const queue = [start]
  while (queue.length > 0) {
    const file = queue.shift()
    for (const next of graph.get(file) ?? []) {
      if (next === start) {
        const path = [file]
        while (previous.get(path[0])) path.unshift(previous.get(path[0]))
        return [...path, start]
      }
      if (members.has(next) && !previous.has(next)) {
        previous.set(next, file)
        queue.push(next)
      }
    }
  }
  return component
}

for (const component of components) {
  process.stderr.write(
    `import cycle: ${cycleThrough(component)
      .map((file) => relative(root, file))
      .join(' → ')}\n`
  )
}
if (components.length > 0) {
  process.stderr.write(
    `${components.length} import cycle(s) among ${graph.size} files: break each (move the shared part to a module both import, or import a type only)\n`
  )
  process.exit(1)
}
