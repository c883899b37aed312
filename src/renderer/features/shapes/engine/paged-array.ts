const PAGE_BITS = 16
const PAGE = 1 << PAGE_BITS
const MASK = PAGE - 1

type Page = Int32Array | Uint32Array

/**
 * 32-bit numbers by index, in pages of 65,536. Growing adds pages and never copies: a typed array grown by doubling
 * leaves its old copies (as large as the new one, all told) to a full collection, which V8 may put off for long
 * after a sync; a million rows' columns grown so left ~70 MiB of them.
 */
export class PagedArray {
  private readonly pages: Page[] = []

  /** `make`: a page (Int32Array or Uint32Array); `initial`: what a new page holds. */
  constructor(
    private readonly make: (length: number) => Page,
    private readonly initial = 0
  ) {}

  /** Indexes that can be read and written (whole pages). */
  get length(): number {
    return this.pages.length * PAGE
  }

  get(index: number): number {
    return (this.pages[index >>> PAGE_BITS] as Page)[index & MASK] as number
  }

  set(index: number, value: number): void {
    ;(this.pages[index >>> PAGE_BITS] as Page)[index & MASK] = value
  }

  /** Makes indexes below `length` writable. */
  ensure(length: number): void {
    while (this.length < length) {
      const page = this.make(PAGE)
      if (this.initial !== 0) page.fill(this.initial)
      this.pages.push(page)
    }
  }
}

export const int32Pages = (initial = 0) => new PagedArray((length) => new Int32Array(length), initial)
export const uint32Pages = () => new PagedArray((length) => new Uint32Array(length))
