/**
 * Which slots hold a row, in slot order, as a Fenwick tree: the n-th row (what a scrolled table asks for) is found in
 * O(log n) however many rows were deleted in between.
 */
export class LiveSlots {
  private tree = new Int32Array(1_025)
  private live = new Uint8Array(1_024)
  count = 0

  get capacity(): number {
    return this.live.length
  }

  add(slot: number): void {
    if (slot >= this.capacity) this.grow(slot + 1)
    this.live[slot] = 1
    this.count += 1
    this.change(slot, 1)
  }

  remove(slot: number): void {
    if (this.live[slot] !== 1) return
    this.live[slot] = 0
    this.count -= 1
    this.change(slot, -1)
  }

  /** The slot of the n-th (0-based) live row. */
  nth(n: number): number {
    let position = 0
    let rest = n
    for (let step = this.capacity; step > 0; step >>= 1) {
      const next = position + step
      if (next <= this.capacity && (this.tree[next] as number) <= rest) {
        position = next
        rest -= this.tree[next] as number
      }
    }
    return position
  }

  private change(slot: number, delta: number): void {
    for (let index = slot + 1; index <= this.capacity; index += index & -index)
      this.tree[index] = (this.tree[index] as number) + delta
  }

  private grow(needed: number): void {
    let capacity = this.capacity
    while (capacity < needed) capacity *= 2
    const live = new Uint8Array(capacity)
    live.set(this.live)
    this.live = live
    this.tree = new Int32Array(capacity + 1)
    for (let index = 1; index <= capacity; index += 1) {
      this.tree[index] = (this.tree[index] as number) + (live[index - 1] as number)
      const parent = index + (index & -index)
      if (parent <= capacity) this.tree[parent] = (this.tree[parent] as number) + (this.tree[index] as number)
    }
  }
}
