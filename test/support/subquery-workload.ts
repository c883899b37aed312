import type pg from 'pg'
import { sleep } from './random-writes'

/**
 * The randomized workload of subquery shapes (issue 30): `issues` filtered through `projects` and `orgs`, random
 * transactions of the kinds a project tracker makes, and what Postgres says each shape holds.
 */

export type Values = Record<string, string | null>
/** A shape's rows by issue id, every value as text (NULL as null). */
export type RowsById = Map<string, Values>

export interface WorkloadShape {
  name: string
  where: string
  /** `params[n]`; the where is checked against Postgres with them as `$n`. */
  params: Record<string, string>
}

/**
 * Every shape holds the sentinel project 0 (owner 1, org 0; org 0 is owned by 1 and active), which no write touches:
 * an issue inserted there at the end reaches every client, after everything written before it.
 */
export const WORKLOAD_SHAPES: WorkloadShape[] = [
  {
    name: 'one level',
    where: 'project_id IN (SELECT id FROM projects WHERE owner_id = $1)',
    params: { 1: '1' }
  },
  {
    name: 'nested',
    where: 'project_id IN (SELECT id FROM projects WHERE org_id IN (SELECT id FROM orgs WHERE owner_id = $1))',
    params: { 1: '1' }
  },
  {
    name: 'OR of two subqueries',
    where:
      'project_id IN (SELECT id FROM projects WHERE owner_id = $1) OR project_id IN (SELECT id FROM projects WHERE org_id = $2)',
    params: { 1: '2', 2: '0' }
  },
  {
    name: 'NOT IN',
    where: 'project_id NOT IN (SELECT id FROM projects WHERE owner_id = $1)',
    params: { 1: '3' }
  },
  {
    name: 'nested AND plain',
    where:
      'project_id IN (SELECT id FROM projects WHERE org_id IN (SELECT id FROM orgs WHERE active)) AND priority < $1',
    params: { 1: '4' }
  }
]

const ISSUE_COLUMNS = ['id', 'project_id', 'title', 'priority'] as const
export const SENTINEL_ISSUE = '999999999'
/** Projects 1..PROJECTS and orgs 1..ORGS are written; project 0 and org 0 are the sentinel's. */
const PROJECTS = 30
const ORGS = 5
const OWNERS = 3
const SEED_ISSUES = 200

export async function createWorkloadTables(pool: pg.Pool): Promise<void> {
  await pool.query('CREATE TABLE orgs (id int PRIMARY KEY, owner_id int, active boolean NOT NULL)')
  await pool.query('CREATE TABLE projects (id int PRIMARY KEY, org_id int, owner_id int)')
  await pool.query('CREATE TABLE issues (id int PRIMARY KEY, project_id int NOT NULL, title text, priority int)')
  await pool.query(`INSERT INTO orgs SELECT g, 1 + g % ${OWNERS}, g % 3 <> 2 FROM generate_series(0, ${ORGS}) g`)
  await pool.query(
    `INSERT INTO projects SELECT g, g % ${ORGS + 1}, 1 + g % ${OWNERS} FROM generate_series(1, ${PROJECTS}) g`
  )
  await pool.query('INSERT INTO projects VALUES (0, 0, 1)')
  await pool.query(
    `INSERT INTO issues SELECT g, 1 + g % ${PROJECTS}, 't' || g, g % 7 FROM generate_series(1, ${SEED_ISSUES}) g`
  )
}

/** The rows Postgres holds for a shape now. */
export async function expectedRows(pool: pg.Pool, shape: WorkloadShape): Promise<RowsById> {
  const params = Object.keys(shape.params)
    .sort((a, b) => Number(a) - Number(b))
    .map((key) => shape.params[key])
  const { rows } = await pool.query<Values>(
    `SELECT ${ISSUE_COLUMNS.join(', ')} FROM issues WHERE ${shape.where}`,
    params
  )
  return new Map(rows.map((row) => [String(row.id), textValues(row)]))
}

/** A row's values as text, whatever a client parsed them into. */
export function textValues(row: Record<string, unknown>): Values {
  const values: Values = {}
  for (const column of ISSUE_COLUMNS) {
    const value = row[column]
    values[column] = value === null || value === undefined ? null : String(value)
  }
  return values
}

/** What a client holds that Postgres does not, and the other way round; empty when equal. */
export function differences(want: RowsById, got: RowsById): string[] {
  const found: string[] = []
  for (const [id, row] of want) {
    const held = got.get(id)
    if (!held) found.push(`missing issue ${id} ${JSON.stringify(row)}`)
    else if (JSON.stringify(held) !== JSON.stringify(row))
      found.push(`issue ${id} is ${JSON.stringify(held)}, Postgres has ${JSON.stringify(row)}`)
  }
  for (const [id, row] of got) if (!want.has(id)) found.push(`extra issue ${id} ${JSON.stringify(row)}`)
  return found
}

/** mulberry32: a small seeded generator, so that a seed names a workload. */
export function seededRandom(seed: number): (n: number) => number {
  let state = seed >>> 0
  return (n) => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 2 ** 32) * n)
  }
}

/**
 * One writer's transactions: project owner changes, org moves, issue inserts into existing and just-created projects
 * (and into projects that just moved), issue moves, edits and deletes, multi-statement transactions, project deletes
 * and upserts. Ids of new issues and projects are the writer's own, so writers do not collide on them.
 */
export class WorkloadWriter {
  private readonly random: (n: number) => number
  private nextIssue: number
  private nextProject: number
  /** Projects this writer created or moved lately: issues go there often, while their move-in may be under way. */
  private recent: number[] = []
  private issues: number[] = []

  constructor(seed: number, writer: number) {
    this.random = seededRandom(seed * 131 + writer)
    this.nextIssue = 1_000_000 * (writer + 1)
    this.nextProject = 1_000 * (writer + 1)
  }

  private pick<T>(list: readonly T[]): T {
    return list[this.random(list.length)] as T
  }

  private owner(): number {
    return 1 + this.random(OWNERS)
  }

  private project(): number {
    if (this.recent.length > 0 && this.random(2) === 0) return this.pick(this.recent)
    return 1 + this.random(PROJECTS)
  }

  private moved(project: number): number {
    this.recent.push(project)
    if (this.recent.length > 6) this.recent.shift()
    return project
  }

  private issue(): number {
    if (this.issues.length > 0 && this.random(2) === 0) return this.pick(this.issues)
    return 1 + this.random(SEED_ISSUES)
  }

  private insertIssue(project: number): string {
    const id = this.nextIssue++
    this.issues.push(id)
    if (this.issues.length > 50) this.issues.shift()
    return `INSERT INTO issues VALUES (${id}, ${project}, 'n${id}', ${this.random(7)})`
  }

  private ownerChange(project = this.project()): string {
    return `UPDATE projects SET owner_id = ${this.owner()} WHERE id = ${this.moved(project)}`
  }

  /** One statement of a random kind. */
  private statement(): string {
    switch (this.random(11)) {
      case 0:
      case 1:
        return this.ownerChange()
      case 2:
        return `UPDATE projects SET org_id = ${this.random(ORGS + 1)} WHERE id = ${this.moved(this.project())}`
      case 3:
        return `UPDATE orgs SET owner_id = ${this.owner()}, active = ${this.random(3) !== 0} WHERE id = ${1 + this.random(ORGS)}`
      case 4:
      case 5:
        return this.insertIssue(this.project())
      case 6:
        return `UPDATE issues SET project_id = ${this.project()} WHERE id = ${this.issue()}`
      case 7:
        return `UPDATE issues SET title = 'e${this.random(1000)}', priority = ${this.random(7)} WHERE id = ${this.issue()}`
      case 8:
        return `DELETE FROM issues WHERE id = ${this.issue()}`
      case 9:
        return `DELETE FROM projects WHERE id = ${this.moved(this.project())}`
      default:
        return `INSERT INTO projects VALUES (${this.moved(this.project())}, ${this.random(ORGS + 1)}, ${this.owner()}) ON CONFLICT (id) DO UPDATE SET owner_id = EXCLUDED.owner_id, org_id = EXCLUDED.org_id`
    }
  }

  /** The statements of the next transaction. */
  transaction(): string[] {
    switch (this.random(8)) {
      case 0: {
        // a new project and an issue in it
        const project = this.moved(this.nextProject++)
        return [
          `INSERT INTO projects VALUES (${project}, ${this.random(ORGS + 1)}, ${this.owner()})`,
          this.insertIssue(project)
        ]
      }
      case 1: {
        const project = this.project()
        return [this.ownerChange(project), this.ownerChange(project), this.ownerChange(project)]
      }
      case 2:
        return [`UPDATE issues SET project_id = ${this.project()} WHERE id = ${this.issue()}`, this.ownerChange()]
      case 3:
        return Array.from({ length: 2 + this.random(3) }, () => this.statement())
      default:
        return [this.statement()]
    }
  }
}

/**
 * Runs `writers` writers, each on its own connection, until `running()` turns false; a transaction that fails (two
 * writers deadlock, Postgres is busy) is rolled back and skipped. Resolves with the number of committed transactions.
 */
export async function writeWorkload(
  pool: pg.Pool,
  options: { seed: number; writers: number; running: () => boolean; pauseMs?: number }
): Promise<number> {
  let committed = 0
  await Promise.all(
    Array.from({ length: options.writers }, async (_, index) => {
      const writer = new WorkloadWriter(options.seed, index)
      while (options.running()) {
        const statements = writer.transaction()
        const client = await pool.connect().catch(() => null)
        if (!client) {
          await sleep(50)
          continue
        }
        try {
          await client.query(`BEGIN; ${statements.join('; ')}; COMMIT`)
          committed += 1
        } catch {
          await client.query('ROLLBACK').catch(() => undefined)
        } finally {
          client.release()
        }
        if (options.pauseMs) await sleep(options.pauseMs)
      }
    })
  )
  return committed
}

/** Inserts the sentinel issue into project 0, which every shape holds. */
export async function insertSentinel(pool: pg.Pool): Promise<void> {
  await pool.query(`INSERT INTO issues VALUES (${SENTINEL_ISSUE}, 0, 'sentinel', 0)`)
}
