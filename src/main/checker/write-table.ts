import { randomBytes } from 'node:crypto'
import pg from 'pg'

/**
 * The only place the checker changes anything: a table of its own, `syncscope_check_<random>`, created in the
 * --write-sql database, changed by the live checks and dropped at the end. It never writes into the user's tables.
 */
export class WriteTable {
  private nextId = 1

  private constructor(
    readonly name: string,
    private readonly pool: pg.Pool
  ) {}

  static async create(url: string): Promise<WriteTable> {
    const pool = new pg.Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 10_000 })
    pool.on('error', () => undefined)
    const name = `syncscope_check_${randomBytes(4).toString('hex')}`
    try {
      await pool.query(`CREATE TABLE ${name} (id integer PRIMARY KEY, label text NOT NULL)`)
    } catch (error) {
      await pool.end()
      throw new Error(`--write-sql: cannot create the checker's table (${(error as Error).message})`, { cause: error })
    }
    const table = new WriteTable(name, pool)
    for (let i = 0; i < 3; i++) await table.insert('seed')
    return table
  }

  /** Inserts one row and returns its id. */
  async insert(label: string): Promise<number> {
    const id = this.nextId++
    await this.pool.query(`INSERT INTO ${this.name} (id, label) VALUES ($1, $2)`, [id, label])
    return id
  }

  async drop(): Promise<void> {
    try {
      await this.pool.query(`DROP TABLE IF EXISTS ${this.name}`)
    } finally {
      await this.pool.end()
    }
  }
}
