import { describe, expect, it } from 'vitest'
import { int32Pages, uint32Pages } from '../../src/renderer/features/shapes/engine/paged-array'

describe('PagedArray: 32-bit numbers in pages that grow without copying', () => {
  it('keeps values across page boundaries, new pages holding the initial value', () => {
    const numbers = int32Pages(-1)
    expect(numbers.length).toBe(0)
    numbers.ensure(1)
    expect(numbers.length).toBe(65_536)
    numbers.set(65_535, 7)
    numbers.ensure(200_000)
    expect(numbers.length).toBe(4 * 65_536)
    numbers.set(65_536, -5)
    numbers.set(199_999, 2 ** 31 - 1)
    expect([
      numbers.get(0),
      numbers.get(65_535),
      numbers.get(65_536),
      numbers.get(199_999),
      numbers.get(200_000)
    ]).toEqual([-1, 7, -5, 2 ** 31 - 1, -1])
  })

  it('holds unsigned values whole in unsigned pages', () => {
    const numbers = uint32Pages()
    numbers.ensure(70_000)
    numbers.set(69_999, 2 ** 32 - 1)
    expect(numbers.get(69_999)).toBe(2 ** 32 - 1)
    expect(numbers.get(0)).toBe(0)
  })
})
