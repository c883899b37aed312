import { join } from 'node:path'
import type pg from 'pg'
import { syncPath, writeDurably } from '../../fs/atomic-write'
import type { Shape } from '../storage/shape'
import type { EncodedRows } from './copy-encoder'
import { type HeldChunk, chunkPath } from '../storage/chunk-files'
import type { SnapshotInfo } from '../storage/snapshot-lifecycle'
import { type ReadRowsArgs, SnapshotCancelledError, TableChangedError, runSnapshot } from './snapshot'

export interface SnapshotBuilderOptions {
  pool: pg.Pool
  /** The folder of every shape's folder (synced once a meta.json is written in one). */
  shapesDir: string
  chunkBytes: number
  log(line: string): void
  /** A snapshot that cannot be completed: the shape is to be dropped (its readers refetch or see its failure). */
  broken(shape: Shape): void
  /** Resolves once a new snapshot includes every transaction the stream delivered so far (see CommitVisibility). */
  awaitDelivered(signal?: AbortSignal): Promise<void>
}

/**
 * Reads a shape's rows itself in the snapshot transaction instead of COPY: a stage above plugs it in (subquery/'s
 * runtime, whose rows carry tags and whose views must agree with them).
 */
export interface SnapshotRowReader {
  readSnapshot(
    client: pg.PoolClient,
    info: SnapshotInfo,
    withRows: boolean,
    add: (rows: EncodedRows) => Promise<void>
  ): Promise<void>
}

/** A snapshot being built: `abort` cancels it, `done` settles once nothing of it writes any more. */
interface Build {
  abort: AbortController
  done: Promise<void>
}

/** Builds shapes' snapshots into their folders and records each complete one in its meta.json. */
export class SnapshotBuilder {
  private readonly builds = new Map<Shape, Build>()
  /** meta.json files being written for complete snapshots: a stop waits for them, so those shapes survive it. */
  private readonly metaWrites = new Set<Promise<void>>()

  constructor(private readonly options: SnapshotBuilderOptions) {}

  /**
   * Starts the shape's snapshot. A table that changed under it drops the shape (its readers refetch); any other
   * failure is reported to the shape's readers as a failed shape. `cancel` stops it.
   */
  start(shape: Shape, reader: SnapshotRowReader | undefined): void {
    const abort = new AbortController()
    const withRows = shape.definition.log === 'full'
    const query = {
      definition: shape.definition,
      withRows,
      // the shape's log takes the transactions routed from now on: its snapshot must include every one before
      beforeSnapshot: (signal?: AbortSignal) => this.options.awaitDelivered(signal),
      read: reader && ((...args: ReadRowsArgs) => reader.readSnapshot(args[0], args[1], withRows, args[2]))
    }
    const progress = {
      onSnapshot: (info: SnapshotInfo) => shape.snapshotTaken(info),
      onChunk: async (chunk: number, last: boolean, body: HeldChunk) => {
        await shape.chunkWritten(chunk, last, body)
        // a shape dropped while its last chunk waited for room is not recorded
        if (last && !shape.invalidated) this.recordComplete(shape)
      }
    }
    const done = runSnapshot(this.options.pool, shape.dir, this.options.chunkBytes, query, progress, abort.signal).then(
      () => {
        this.builds.delete(shape)
      },
      (error: unknown) => {
        this.builds.delete(shape)
        if (error instanceof SnapshotCancelledError) return
        if (!(error instanceof TableChangedError)) {
          this.options.log(`snapshot of ${shape.handle} failed: ${(error as Error).message}`)
          shape.fail(error as Error)
        }
        this.options.broken(shape)
      }
    )
    this.builds.set(shape, { abort, done })
  }

  /** Shapes whose snapshot is still being built. */
  building(): Shape[] {
    return [...this.builds.keys()]
  }

  /** Cancels the shape's snapshot if it is being built; resolves once nothing of it writes any more. */
  async cancel(shape: Shape): Promise<void> {
    const build = this.builds.get(shape)
    build?.abort.abort()
    await build?.done
  }

  /** Resolves once the meta.json files being written are written. */
  async recorded(): Promise<void> {
    await Promise.all(this.metaWrites)
  }

  private recordComplete(shape: Shape): void {
    const saving = this.saveMeta(shape).catch((error: unknown) => {
      if (!shape.invalidated)
        this.options.log(
          `shape ${shape.handle} will not survive a restart: its meta.json could not be written (${(error as Error).message})`
        )
    })
    this.metaWrites.add(saving)
    void saving.finally(() => this.metaWrites.delete(saving))
  }

  /** Makes the snapshot and log durable, then records the shape in meta.json: a shape without one is not restored. */
  private async saveMeta(shape: Shape): Promise<void> {
    const meta = shape.meta()
    if (!meta || shape.invalidated) return
    for (let chunk = 0; chunk < meta.chunks.length; chunk++) await syncPath(chunkPath(shape.dir, chunk))
    await shape.log.sync()
    if (shape.invalidated) return
    await writeDurably(join(shape.dir, 'meta.json'), JSON.stringify(meta))
    await syncPath(this.options.shapesDir)
  }
}
