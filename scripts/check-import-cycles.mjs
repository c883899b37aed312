#!/usr/bin/env node
// Import cycles among the TypeScript sources (run by `npm run lint`): each cycle printed as the files it goes through.
// A cycle of imports that exist at run time fails. A cycle that needs a type-only import (`import type …`, or every
// name `type`; erased at run time, but the files still cannot be read one after the other) is counted and printed, and
// fails with `--types`.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const args = process.argv.slice(2)
const failOnTypes = args.includes('--types')
const paths = args.filter((arg) => arg !== '--types')
const sourceRoots = paths.length > 0 ? paths.map((path) => resolve(path)) : [join(root, 'src')]

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

/** Every relative import of `file`: its target and whether it is erased at run time. */
function importsOf(file) {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false)
  const found = []
  const visit = (node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push({ specifier: node.moduleSpecifier.text, typeOnly: erased(node) })
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push({ specifier: node.arguments[0].text, typeOnly: false })
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
    .map(({ specifier, typeOnly }) => ({ target: resolveImport(file, specifier), typeOnly }))
    .filter(({ target }) => target !== null)
}

const imports = new Map(sourceRoots.flatMap(sourceFiles).map((file) => [file, importsOf(file)]))
/** file → the files it imports; `runtime` keeps only the imports that exist at run time. */
const graphOf = (runtime) =>
  new Map(
    [...imports].map(([file, found]) => [
      file,
      [...new Set(found.filter(({ typeOnly }) => !runtime || !typeOnly).map(({ target }) => target))]
    ])
  )

/** Tarjan's strongly connected components: each of more than one file (or a file importing itself) is a cycle. */
function cyclesOf(graph) {
  const index = new Map()
  const low = new Map()
  const stack = []
  const onStack = new Set()
  const components = []
  let counter = 0
  const connect = (file) => {
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
  return components
}

/** One concrete cycle through a component, shortest from its first file, for the message. */
function cycleThrough(graph, component) {
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

/** The cycle as `a.ts → b.ts ⇢ a.ts`: `⇢` is an import of types only. */
function describeCycle(path) {
  return path
    .map((file, at) => {
      const name = relative(root, file)
      if (at === 0) return name
      const typeOnly = !imports.get(path[at - 1]).some(({ target, typeOnly }) => target === file && !typeOnly)
      return `${typeOnly ? '⇢' : '→'} ${name}`
    })
    .join(' ')
}

const runtimeGraph = graphOf(true)
const fullGraph = graphOf(false)
const runtimeCycles = cyclesOf(runtimeGraph)
const inRuntimeCycle = new Set(runtimeCycles.flat())
// a component of the whole graph holding no run-time cycle closes only through imports of types
const typeCycles = cyclesOf(fullGraph).filter((component) => !component.some((file) => inRuntimeCycle.has(file)))

for (const component of runtimeCycles)
  process.stderr.write(`import cycle: ${describeCycle(cycleThrough(runtimeGraph, component))}\n`)
for (const component of typeCycles)
  process.stderr.write(`type-only import cycle: ${describeCycle(cycleThrough(fullGraph, component))}\n`)
const fix = 'break each: move the shared part (a type too) to a module both import'
if (runtimeCycles.length > 0) {
  process.stderr.write(`${runtimeCycles.length} import cycle(s) among ${imports.size} files: ${fix}\n`)
  process.exit(1)
}
if (typeCycles.length > 0) {
  process.stderr.write(
    `${typeCycles.length} type-only import cycle(s) among ${imports.size} files${failOnTypes ? '' : ' (they fail with --types)'}: ${fix}\n`
  )
  if (failOnTypes) process.exit(1)
}
