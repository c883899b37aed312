import { isChangeMessage, isMustRefetch, type ChangeMessage, type Message, type Row } from './messages'

/** What one message did to the rows (with the message, so a log view can show the row as it was before). */
export type RowChange =
  | { kind: 'insert'; key: string; row: Row; message: ChangeMessage }
  | { kind: 'update'; key: string; before: Row; row: Row; changed: string[]; message: ChangeMessage }
  | { kind: 'delete'; key: string; before: Row; message: ChangeMessage }
  | { kind: 'reset' }

export interface MaterialiseOptions {
  /**
   * `changes_only` shapes carry changes to rows the client never received: updates and deletes of unseen keys are
   * ignored, as the official client does.
   */
  log: 'full' | 'changes_only'
}

/** The current value of a shape, by key, built from its log. */
export class MaterialisedShape {
  readonly rows = new Map<string, Row>()

  constructor(private readonly options: MaterialiseOptions) {}

  /** Applies messages in order and says what changed. A must-refetch empties the shape. */
  apply(messages: readonly Message[]): RowChange[] {
    const changes: RowChange[] = []
    for (const message of messages) {
      if (isMustRefetch(message)) {
        this.rows.clear()
        changes.push({ kind: 'reset' })
      } else if (isChangeMessage(message)) {
        const change = this.applyChange(message)
        if (change) changes.push(change)
      }
    }
    return changes
  }

  private applyChange(message: ChangeMessage): RowChange | null {
    const { key, value } = message
    const operation = message.headers.operation
    const before = this.rows.get(key)
    if (operation === 'delete') {
      if (!before) return null
      this.rows.delete(key)
      return { kind: 'delete', key, before, message }
    }
    if (operation === 'insert' || !before) {
      if (!before && operation === 'update' && this.options.log === 'changes_only') return null
      this.rows.set(key, { ...value })
      return { kind: 'insert', key, row: value, message }
    }
    // replica=default sends the key and changed columns only; replica=full the whole row: a merge serves both.
    const row = { ...before, ...value }
    this.rows.set(key, row)
    return { kind: 'update', key, before, row, changed: Object.keys(value).filter((column) => before[column] !== value[column]), message }
  }
}
