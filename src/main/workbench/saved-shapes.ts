import { randomUUID } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { z } from 'zod'
import {
  SavedShapeSchema,
  type NameValue,
  type SavedShape,
  type SavedShapeInputSchema,
  type ShapeTarget
} from '../../shared/contract/shapes-workbench'
import { isCredentialHeader, isCredentialParam } from '../../shared/shape-client/credentials'
import { writeAtomically } from '../fs/atomic-write'

const SavedShapesFileSchema = z.object({ version: z.literal(1), shapes: z.array(SavedShapeSchema) })

export class SavedShapesFileError extends Error {}

/** Credentials are not written to disk: their values are dropped and marked, the names kept. */
function withoutCredentials(target: ShapeTarget): ShapeTarget {
  if (target.kind !== 'custom') return target
  const redact = (isCredential: (name: string) => boolean) => (entry: NameValue) =>
    isCredential(entry.name) && entry.value ? { ...entry, value: '', redacted: true } : entry
  return {
    ...target,
    headers: target.headers.map(redact(isCredentialHeader)),
    params: target.params.map(redact(isCredentialParam))
  }
}

/** The workbench's saved shapes: one JSON file in the data folder, validated on read, replaced atomically on write. */
export class SavedShapesStore {
  private writes: Promise<unknown> = Promise.resolve()

  constructor(private readonly file: string) {}

  async list(): Promise<SavedShape[]> {
    let text: string
    try {
      text = await readFile(this.file, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw error
    }
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      throw new SavedShapesFileError(`${this.file} is not valid JSON; fix or remove it (it is left as it is)`)
    }
    const parsed = SavedShapesFileSchema.safeParse(json)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      throw new SavedShapesFileError(
        `${this.file} is not a saved-shapes file (${issue?.path.join('.') || 'root'}: ${issue?.message}); fix or remove it (it is left as it is)`
      )
    }
    return parsed.data.shapes
  }

  /** Adds the shape, or replaces the one with the same name. */
  save(input: z.output<typeof SavedShapeInputSchema>): Promise<SavedShape> {
    return this.serialised(async () => {
      const shapes = await this.list()
      const existing = shapes.find((shape) => shape.name === input.name)
      const saved: SavedShape = {
        ...input,
        target: withoutCredentials(input.target),
        id: existing?.id ?? randomUUID(),
        savedAt: new Date().toISOString()
      }
      await this.write(
        existing ? shapes.map((shape) => (shape.id === existing.id ? saved : shape)) : [...shapes, saved]
      )
      return saved
    })
  }

  remove(id: string): Promise<boolean> {
    return this.serialised(async () => {
      const shapes = await this.list()
      const kept = shapes.filter((shape) => shape.id !== id)
      if (kept.length === shapes.length) return false
      await this.write(kept)
      return true
    })
  }

  private write(shapes: SavedShape[]): Promise<void> {
    return writeAtomically(this.file, `${JSON.stringify({ version: 1, shapes }, null, 2)}\n`, 0o600)
  }

  private serialised<T>(task: () => Promise<T>): Promise<T> {
    const run = this.writes.then(task, task)
    this.writes = run.catch(() => undefined)
    return run
  }
}
