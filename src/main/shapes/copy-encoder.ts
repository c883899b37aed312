import type { ShapeDefinition } from './definition'
import { InsertEncoder } from './messages'
import { parseCopyLine } from './row-sql'

const TAB = 9
const NEWLINE = 10
const QUOTE = 34
const SLASH = 47
const BACKSLASH = 92

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8')
const NULL_JSON = bytes('null')
const TRUE_JSON = bytes('"true"')
const FALSE_JSON = bytes('"false"')
const ROW_END = bytes('}}\n')

/** Positions of one byte value in a buffer, walked forward: each lookup costs O(distance), the batch O(n). */
class ByteCursor {
  private next = -1

  constructor(
    private readonly data: Buffer,
    private readonly byte: number
  ) {
    this.next = data.indexOf(byte)
  }

  /** Whether the byte occurs in [start, end); ranges must be asked for in increasing order. */
  within(start: number, end: number): boolean {
    while (this.next !== -1 && this.next < start) this.next = this.data.indexOf(this.byte, this.next + 1)
    return this.next !== -1 && this.next < end
  }
}

/** One snapshot chunk's worth of encoded rows, and where each row ends in it. */
export interface EncodedRows {
  data: Buffer
  /** End offset (exclusive, after its newline) of each row in `data`. */
  rowEnds: number[]
}

/**
 * Turns COPY text output into insert messages (one JSON line each) byte for byte, without decoding to strings: COPY's
 * escapes (`\\ \n \r \t \b \f`) are JSON's own, so a field is a JSON string body once its `"` are escaped. Lines that
 * are not JSON-safe (a `\v` escape, raw control characters) go through the general InsertEncoder.
 */
export class CopyEncoder {
  private readonly general: InsertEncoder
  private readonly head: Buffer
  private readonly keyPart: Buffer
  private readonly valueHead: Buffer
  private readonly names: Buffer[]
  private readonly isBool: boolean[]
  private readonly keyIndexes: number[]
  private readonly fieldCount: number

  constructor(definition: ShapeDefinition) {
    this.general = new InsertEncoder(definition)
    const { table } = definition
    const headers = { operation: 'insert', relation: [table.schema, table.name] }
    const keyStart = JSON.stringify(this.general.keyStart).slice(1, -1)
    this.head = bytes(`{"headers":${JSON.stringify(headers)},"key":"${keyStart}`)
    this.keyPart = bytes('\\"')
    this.valueHead = bytes('","value":{')
    this.names = definition.columns.map((name, index) => bytes(`${index === 0 ? '' : ','}${JSON.stringify(name)}:`))
    this.isBool = definition.columns.map((name) => table.columns.some((column) => column.name === name && column.type === 'bool' && !column.isArray))
    this.keyIndexes = table.keyColumns.map((name) => this.general.columns.indexOf(name))
    this.fieldCount = this.general.columns.length
  }

  /** The columns the COPY must select, in order. */
  get columns(): string[] {
    return this.general.columns
  }

  /** Encodes the complete lines of `data` (which must end with a newline). */
  encode(data: Buffer): EncodedRows {
    // JSON rows run three to four times the size of COPY's: room for that up front, so the buffer rarely grows
    const out = new Writer(data.length * 4 + 1024)
    const rowEnds: number[] = []
    const quotes = new ByteCursor(data, QUOTE)
    const slashes = new ByteCursor(data, SLASH)
    const starts = new Array<number>(this.fieldCount)
    const ends = new Array<number>(this.fieldCount)
    let lineStart = 0
    while (lineStart < data.length) {
      const lineEnd = data.indexOf(NEWLINE, lineStart)
      if (lineEnd === -1) break
      if (!this.split(data, lineStart, lineEnd, starts, ends) || !this.safe(data, lineStart, lineEnd)) {
        out.string(`${this.general.encode(parseCopyLine(data.toString('utf8', lineStart, lineEnd)))}\n`)
      } else {
        this.row(data, out, starts, ends, { quote: quotes.within(lineStart, lineEnd), slash: slashes.within(lineStart, lineEnd) })
      }
      rowEnds.push(out.length)
      lineStart = lineEnd + 1
    }
    return { data: out.result(), rowEnds }
  }

  /** Field boundaries of one line; false when the line does not have the expected number of fields. */
  private split(data: Buffer, start: number, end: number, starts: number[], ends: number[]): boolean {
    let at = start
    for (let field = 0; field < this.fieldCount; field++) {
      starts[field] = at
      const tab = field === this.fieldCount - 1 ? -1 : data.indexOf(TAB, at)
      if (field < this.fieldCount - 1 && (tab === -1 || tab > end)) return false
      ends[field] = field === this.fieldCount - 1 ? end : tab
      at = (ends[field] as number) + 1
    }
    return true
  }

  /** No raw control characters (tab aside) and no `\v` escape (conservatively, any backslash-v). */
  private safe(data: Buffer, start: number, end: number): boolean {
    for (let at = start; at < end; at++) {
      const byte = data[at] as number
      if ((byte < 32 && byte !== TAB) || (byte === BACKSLASH && data[at + 1] === 118)) return false
    }
    return true
  }

  private row(data: Buffer, out: Writer, starts: number[], ends: number[], line: LineTraits): void {
    out.bytes(this.head)
    for (let position = 0; position < this.keyIndexes.length; position++) {
      if (position > 0) out.byte(SLASH)
      const index = this.keyIndexes[position] as number
      const start = starts[index] as number
      const end = ends[index] as number
      if (isNull(data, start, end)) out.byte(95)
      else {
        out.bytes(this.keyPart)
        this.field(data, out, start, end, line.quote, line.slash)
        out.bytes(this.keyPart)
      }
    }
    out.bytes(this.valueHead)
    for (let index = 0; index < this.names.length; index++) {
      out.bytes(this.names[index] as Buffer)
      const start = starts[index] as number
      const end = ends[index] as number
      if (isNull(data, start, end)) out.bytes(NULL_JSON)
      else if (this.isBool[index] && end - start === 1 && (data[start] === 116 || data[start] === 102)) out.bytes(data[start] === 116 ? TRUE_JSON : FALSE_JSON)
      else {
        out.byte(QUOTE)
        this.field(data, out, start, end, line.quote, false)
        out.byte(QUOTE)
      }
    }
    out.bytes(ROW_END)
  }

  /** A field's bytes with `"` escaped and, in keys, `/` doubled (a byte-wise copy only when the line has either). */
  private field(data: Buffer, out: Writer, start: number, end: number, quotes: boolean, slashes: boolean): void {
    const field = data.subarray(start, end)
    if (!(quotes && field.includes(QUOTE)) && !(slashes && field.includes(SLASH))) return out.slice(data, start, end)
    for (let at = start; at < end; at++) {
      const byte = data[at] as number
      if (byte === QUOTE) out.byte(BACKSLASH)
      else if (byte === SLASH && slashes) out.byte(SLASH)
      out.byte(byte)
    }
  }
}

/** Whether a line holds any `"` or `/` at all, so most fields are copied without a look at their bytes. */
interface LineTraits {
  quote: boolean
  slash: boolean
}

const isNull = (data: Buffer, start: number, end: number): boolean => end - start === 2 && data[start] === BACKSLASH && data[start + 1] === 78

/**
 * A growable output buffer. Bytes are copied by plain loops: fields are short, and for a few dozen bytes a loop beats
 * Buffer#copy, whose per-call overhead dominated the encoder's profile.
 */
class Writer {
  private buffer: Buffer
  length = 0

  constructor(size: number) {
    this.buffer = Buffer.allocUnsafe(size)
  }

  private reserve(count: number): void {
    if (this.length + count <= this.buffer.length) return
    const bigger = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.length + count))
    this.buffer.copy(bigger, 0, 0, this.length)
    this.buffer = bigger
  }

  byte(value: number): void {
    this.reserve(1)
    this.buffer[this.length++] = value
  }

  bytes(value: Buffer): void {
    this.slice(value, 0, value.length)
  }

  slice(source: Buffer, start: number, end: number): void {
    this.reserve(end - start)
    const buffer = this.buffer
    let length = this.length
    for (let at = start; at < end; at++) buffer[length++] = source[at] as number
    this.length = length
  }

  string(text: string): void {
    const size = Buffer.byteLength(text)
    this.reserve(size)
    this.length += this.buffer.write(text, this.length, 'utf8')
  }

  result(): Buffer {
    return this.buffer.subarray(0, this.length)
  }
}
