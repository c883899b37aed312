import {
  isChangeMessage,
  isEventMessage,
  isMustRefetch,
  type ChangeMessage,
  type EventMessage,
  type Message,
  type Row
} from './messages'
import { TagIndex, isIncluded, type Membership } from './tags'

/** What one message did to the rows (with the message, so a log view can show the row as it was before). */
export type RowChange =
  | { kind: 'insert'; key: string; row: Row; message: ChangeMessage }
  | { kind: 'update'; key: string; before: Row; row: Row; changed: string[]; message: ChangeMessage }
  | { kind: 'delete'; key: string; before: Row; message: ChangeMessage | EventMessage }
  | { kind: 'reset' }

export interface MaterialiseOptions {
  /**
   * `changes_only` shapes carry changes to rows the client never received: updates and deletes of unseen keys are
   * ignored, as the official client does.
   */
  log: 'full' | 'changes_only'
}

/**
 * Where a materialised shape keeps its rows: a `Map` unless told otherwise (the workbench's worker keeps a million
 * rows in a compact columnar store). `set` gets a row the store may keep as it is.
 */
export interface RowStore {
  get(key: string): Row | undefined
  set(key: string, row: Row): void
  delete(key: string): boolean
  clear(): void
}

/**
 * The current value of a shape, by key, built from its log. Subquery shapes' rows carry tags and active conditions:
 * a `move-out` / `move-in` event flips the conditions of the rows whose tags hold its patterns, and a row no tag of
 * which stays satisfied is deleted here (the server sends no delete for it).
 */
export class MaterialisedShape<Store extends RowStore = Map<string, Row>> {
  readonly rows: Store
  private readonly tags = new TagIndex()

  constructor(
    private readonly options: MaterialiseOptions,
    rows?: Store
  ) {
    this.rows = rows ?? (new Map<string, Row>() as RowStore as Store)
  }

  /** Why a row is in the shape, when its shape has subqueries; null otherwise. */
  membership(key: string): Membership | null {
    return this.tags.membership(key)
  }

  /**
   * Applies messages in order and says what changed. A must-refetch empties the shape. A row that leaves and comes
   * back within the messages (a move-out, then the move-in rows of the same apply) is one update, or nothing when it
   * came back unchanged.
   */
  apply(messages: readonly Message[]): RowChange[] {
    const changes: RowChange[] = []
    for (const message of messages) {
      if (isMustRefetch(message)) {
        this.rows.clear()
        this.tags.clear()
        changes.push({ kind: 'reset' })
      } else if (isChangeMessage(message)) {
        const change = this.applyChange(message)
        if (change) changes.push(change)
      } else if (isEventMessage(message)) {
        changes.push(...this.applyMove(message))
      }
    }
    return netOut(changes)
  }

  private applyChange(message: ChangeMessage): RowChange | null {
    const { key, value } = message
    const operation = message.headers.operation
    const before = this.rows.get(key)
    if (operation === 'delete') {
      if (!before) return null
      this.remove(key)
      return { kind: 'delete', key, before, message }
    }
    if (operation === 'insert' || !before) {
      if (!before && operation === 'update' && this.options.log === 'changes_only') return null
      this.rows.set(key, { ...value })
      this.tags.set(key, message.headers.tags, message.headers.active_conditions)
      return { kind: 'insert', key, row: value, message }
    }
    // replica=default sends the key and changed columns only; replica=full the whole row: a merge serves both.
    const row = { ...before, ...value }
    this.rows.set(key, row)
    // An update without tags keeps the row's tags (and its conditions unless it brings new ones).
    if (message.headers.tags) this.tags.set(key, message.headers.tags, message.headers.active_conditions)
    else if (message.headers.active_conditions) this.tags.setConditions(key, message.headers.active_conditions)
    return {
      kind: 'update',
      key,
      before,
      row,
      changed: Object.keys(value).filter((column) => before[column] !== value[column]),
      message
    }
  }

  private applyMove(message: EventMessage): RowChange[] {
    const { event, patterns } = message.headers
    if ((event !== 'move-in' && event !== 'move-out') || !patterns) return []
    const changes: RowChange[] = []
    for (const key of this.tags.flip(patterns, event === 'move-in')) {
      const before = this.rows.get(key)
      const membership = this.tags.membership(key)
      if (!before || !membership || isIncluded(membership)) continue
      this.remove(key)
      changes.push({ kind: 'delete', key, before, message })
    }
    return changes
  }

  private remove(key: string): void {
    this.rows.delete(key)
    this.tags.delete(key)
  }
}

/**
 * A key a move-out deleted and a move-in inserted again within one batch becomes one update, or nothing when its row
 * came back equal. (Plain deletes and inserts stay as they are: the log said so.)
 */
function netOut(changes: RowChange[]): RowChange[] {
  const deleted = new Map<string, number>()
  const netted: Array<RowChange | null> = []
  for (const change of changes) {
    if (change.kind === 'delete' && isEventMessage(change.message)) deleted.set(change.key, netted.length)
    if (change.kind === 'reset') deleted.clear()
    const at = change.kind === 'insert' ? deleted.get(change.key) : undefined
    const removal = at === undefined ? null : netted[at]
    if (change.kind !== 'insert' || !removal || removal.kind !== 'delete') {
      netted.push(change)
      continue
    }
    netted[at as number] = null
    deleted.delete(change.key)
    const { before } = removal
    const changed = [...new Set([...Object.keys(before), ...Object.keys(change.row)])].filter(
      (column) => before[column] !== change.row[column]
    )
    if (changed.length > 0)
      netted.push({ kind: 'update', key: change.key, before, row: change.row, changed, message: change.message })
  }
  return netted.filter((change): change is RowChange => change !== null)
}
