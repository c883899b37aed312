/**
 * route() cost per change with 10,000 shapes on one table: indexed `owner_id = $1` shapes, IN-list shapes,
 * and a baseline of the same shapes forced through the fallback list (evaluated one by one).
 * Run: npx tsx bench/where-route.ts
 */
import { type ColumnTypes, type CompiledWhere, compileWhere, createShapeRouter, loadParser } from '../src/main/sql'

const columns: ColumnTypes = {
  id: { type: 'int8', category: 'number' },
  owner_id: { type: 'int8', category: 'number' },
  title: { type: 'text', category: 'text' },
  done: { type: 'bool', category: 'bool' }
}
const SHAPES = 10_000
const CHANGES = 200_000

function measure(label: string, route: (row: Record<string, string | null>) => unknown[], changes: number): void {
  const rows = Array.from({ length: 1000 }, (_, i) => ({
    id: String(i),
    owner_id: String((i * 7919) % (SHAPES * 2)),
    title: `t${i}`,
    done: i % 2 ? 't' : 'f'
  }))
  let routed = 0
  const start = process.hrtime.bigint()
  for (let i = 0; i < changes; i++) routed += route(rows[i % rows.length]!).length
  const micros = Number(process.hrtime.bigint() - start) / 1000 / changes
  console.log(
    `${label.padEnd(48)} ${micros.toFixed(2).padStart(9)} µs/change   (${(routed / changes).toFixed(2)} shapes matched per change)`
  )
}

async function main(): Promise<void> {
  await loadParser()
  const compileStart = process.hrtime.bigint()
  const equality: CompiledWhere[] = []
  for (let i = 0; i < SHAPES; i++)
    equality.push(compileWhere({ where: 'owner_id = $1 AND NOT done', params: { 1: String(i) }, columns }))
  console.log(
    `compileWhere: ${(Number(process.hrtime.bigint() - compileStart) / 1e6 / SHAPES).toFixed(3)} ms per where`
  )

  const indexed = createShapeRouter<number>()
  equality.forEach((compiled, i) => indexed.add(String(i), 'items', compiled, i))
  measure(`${SHAPES} × owner_id = const AND NOT done (indexed)`, (row) => indexed.route('items', row), CHANGES)

  const inLists = createShapeRouter<number>()
  for (let i = 0; i < SHAPES; i++) {
    inLists.add(
      String(i),
      'items',
      compileWhere({ where: `owner_id IN (${i}, ${i + SHAPES})`, params: {}, columns }),
      i
    )
  }
  measure(`${SHAPES} × owner_id IN (a, b) (indexed)`, (row) => inLists.route('items', row), CHANGES)

  const fallback = createShapeRouter<number>()
  equality.forEach((compiled, i) => fallback.add(String(i), 'items', { ...compiled, probes: null }, i))
  measure(`${SHAPES} × same wheres, no index (fallback list)`, (row) => fallback.route('items', row), 2_000)
}

void main()
