import type { ResolvedShape } from '../definition/definition'
import { COPY_ENCODER_WASM } from './copy-encoder-wasm'
import { InsertEncoder, isBoolColumn } from '../storage/messages'
import { parseCopyLine } from '../definition/row-sql'

const NEWLINE = 10
const PAGE_BYTES = 65536
/** Below this address the module keeps its own constants and results (see copy-encoder.wat). */
const LAYOUT_START = 64
/** The module reads and writes sixteen bytes at a time: up to this many past the end of its input and of each copy. */
const VECTOR_SLACK = 16

/**
 * Most COPY text to give one encode(): the encoder reserves memory for the worst case, about 40 times its input, and
 * the first touch of each page costs a fault. A batch of the copy reaches 4 MiB while file writes hold the encoding
 * back.
 */
export const ENCODE_BYTES = 256 * 1024

/** Where the whole lines of `lines` from `start` end within `most` bytes (or where the first ends, if it is longer). */
export function wholeLinesEnd(lines: Buffer, start: number, most: number): number {
  if (lines.length - start <= most) return lines.length
  const last = lines.lastIndexOf(NEWLINE, start + most - 1)
  return (last >= start ? last : lines.indexOf(NEWLINE, start + most)) + 1
}

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8')
const align = (at: number, to: number): number => Math.ceil(at / to) * to

/** One batch's worth of encoded rows, and where each row ends in it. */
export interface EncodedRows {
  data: Buffer
  /** End offset (exclusive, after its newline) of each row in `data`. */
  rowEnds: Int32Array
}

interface EncoderModule {
  memory: WebAssembly.Memory
  configure(...layout: number[]): void
  encode(input: number, inputEnd: number, output: number, rowEnds: number, base: number): number
}

let compiled: WebAssembly.Module | null = null
const encoderModule = (): WebAssembly.Module =>
  (compiled ??= new WebAssembly.Module(Buffer.from(COPY_ENCODER_WASM, 'base64')))

/**
 * Turns COPY text output into insert messages (one JSON line each) byte for byte, without decoding to strings: COPY's
 * escapes (`\\ \n \r \t \b \f`) are JSON's own, so a field is a JSON string body once its `"` are escaped. The byte
 * loop runs as WebAssembly (copy-encoder.wat), four times the speed of the same loop in JavaScript and the largest
 * cost of an initial sync. Lines that are not JSON-safe (a `\v` escape, raw control characters, a wrong number of
 * fields) go through the general InsertEncoder.
 */
export class CopyEncoder {
  private readonly general: InsertEncoder
  private readonly wasm: EncoderModule
  private readonly fieldCount: number
  /** Bytes a row adds beyond four times its line (keys and escapes at most double each field, twice). */
  private readonly rowOverhead: number
  /** Where batches start in the module's memory, after the message pieces and field tables. */
  private readonly dataStart: number

  constructor(definition: ResolvedShape) {
    this.general = new InsertEncoder(definition)
    this.wasm = new WebAssembly.Instance(encoderModule(), {}).exports as unknown as EncoderModule
    const { table } = definition
    const keyStart = JSON.stringify(this.general.keyStart).slice(1, -1)
    const head = bytes(`${this.general.prefix}"${keyStart}`)
    const valueHead = bytes('","value":{')
    const names = definition.columns.map((name, index) => bytes(`${index === 0 ? '' : ','}${JSON.stringify(name)}:`))
    const isBool = definition.columns.map((name) => isBoolColumn(table, name))
    const keyIndexes = table.keyColumns.map((name) => this.general.columns.indexOf(name))
    this.fieldCount = this.general.columns.length
    const namesSize = names.reduce((sum, name) => sum + name.length, 0)
    this.rowOverhead = head.length + valueHead.length + namesSize + 8 * (this.fieldCount + keyIndexes.length) + 8

    const pieces = [head, valueHead, ...names]
    const piecesSize = pieces.reduce((sum, piece) => sum + piece.length, 0)
    const tables = align(LAYOUT_START + piecesSize, 8)
    const namesTable = tables
    const boolsTable = namesTable + 8 * names.length
    const keysTable = boolsTable + 4 * isBool.length
    const starts = keysTable + 4 * keyIndexes.length
    const ends = starts + 4 * this.fieldCount
    this.dataStart = align(ends + 4 * this.fieldCount, 8)
    this.ensureMemory(this.dataStart)

    const memory = Buffer.from(this.wasm.memory.buffer)
    const words = new Int32Array(this.wasm.memory.buffer)
    const addresses = pieces.map((piece, index) =>
      pieces.slice(0, index).reduce((at, before) => at + before.length, LAYOUT_START)
    )
    pieces.forEach((piece, index) => memory.set(piece, addresses[index]))
    names.forEach((name, index) => words.set([addresses[index + 2] as number, name.length], namesTable / 4 + 2 * index))
    words.set(isBool.map(Number), boolsTable / 4)
    words.set(keyIndexes, keysTable / 4)
    this.wasm.configure(
      this.fieldCount,
      names.length,
      keyIndexes.length,
      addresses[0] as number,
      head.length,
      addresses[1] as number,
      valueHead.length,
      namesTable,
      boolsTable,
      keysTable,
      starts,
      ends
    )
  }

  /** The columns the COPY must select, in order. */
  get columns(): string[] {
    return this.general.columns
  }

  private ensureMemory(size: number): void {
    const missing = size - this.wasm.memory.buffer.byteLength
    if (missing > 0) this.wasm.memory.grow(Math.ceil(missing / PAGE_BYTES))
  }

  /**
   * Encodes the complete lines of `data` (which must end with a newline). The result lives in the encoder's own
   * memory: it is valid until the next call.
   */
  encode(data: Buffer): EncodedRows {
    const input = this.dataStart
    const inputEnd = input + data.length
    const output = align(inputEnd + VECTOR_SLACK, 8)
    // every line holds fieldCount - 1 tabs and a newline: that bounds the rows, and so the output
    const maxRows = Math.floor(data.length / this.fieldCount) + 1
    const room = (outputEnd: number, position: number) =>
      align(outputEnd + 4 * (inputEnd - position) + maxRows * this.rowOverhead + VECTOR_SLACK, 8)
    let rowEndsAt = room(output, input)
    this.ensureMemory(rowEndsAt + 4 * maxRows)
    new Uint8Array(this.wasm.memory.buffer, input, data.length).set(data)
    let position = input
    let outputEnd = output
    let rows = 0
    while (position < inputEnd) {
      rows += this.wasm.encode(position, inputEnd, outputEnd, rowEndsAt + 4 * rows, output)
      ;[position, outputEnd] = new Int32Array(this.wasm.memory.buffer, 0, 2) as unknown as [number, number]
      if (position >= inputEnd) break
      const lineEnd = input + data.indexOf(NEWLINE, position - input)
      if (lineEnd < position) break
      const line = `${this.general.encode(parseCopyLine(data.toString('utf8', position - input, lineEnd - input)))}\n`
      // such a line may outgrow what was reserved for it (a control character becomes six bytes): the row ends move on
      const needed = room(outputEnd + Buffer.byteLength(line), lineEnd + 1)
      if (needed > rowEndsAt) rowEndsAt = this.moveRowEnds(rowEndsAt, needed, rows, maxRows)
      outputEnd += Buffer.from(this.wasm.memory.buffer).write(line, outputEnd, 'utf8')
      new Int32Array(this.wasm.memory.buffer)[rowEndsAt / 4 + rows] = outputEnd - output
      rows += 1
      position = lineEnd + 1
    }
    return {
      data: Buffer.from(this.wasm.memory.buffer, output, outputEnd - output),
      rowEnds: new Int32Array(this.wasm.memory.buffer, rowEndsAt, rows)
    }
  }

  private moveRowEnds(from: number, to: number, rows: number, maxRows: number): number {
    this.ensureMemory(to + 4 * maxRows)
    new Int32Array(this.wasm.memory.buffer).copyWithin(to / 4, from / 4, from / 4 + rows)
    return to
  }
}
