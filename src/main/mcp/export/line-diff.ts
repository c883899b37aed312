/**
 * A line diff (longest common subsequence) of two texts: `- ` removed, `+ ` added, `  ` kept. Config files are small;
 * beyond a few thousand lines the middle is shown as a whole replacement rather than spend quadratic memory.
 */
export function lineDiff(before: string, after: string, maxCells = 4_000_000): string[] {
  const a = splitLines(before)
  const b = splitLines(after)
  let start = 0
  while (start < a.length && start < b.length && a[start] === b[start]) start++
  let endA = a.length
  let endB = b.length
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--
    endB--
  }
  const midA = a.slice(start, endA)
  const midB = b.slice(start, endB)
  const middle =
    midA.length * midB.length > maxCells
      ? [...midA.map((line) => `- ${line}`), ...midB.map((line) => `+ ${line}`)]
      : lcsDiff(midA, midB)
  const context = (lines: string[]) => lines.map((line) => `  ${line}`)
  return [
    ...context(a.slice(Math.max(0, start - 3), start)),
    ...middle,
    ...context(a.slice(endA, Math.min(a.length, endA + 3)))
  ]
}

function splitLines(text: string): string[] {
  if (text === '') return []
  const lines = text.split('\n')
  if (lines[lines.length - 1] === '') lines.pop()
  return lines
}

function lcsDiff(a: string[], b: string[]): string[] {
  const table: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0))
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--)
      table[i]![j] = a[i] === b[j] ? table[i + 1]![j + 1]! + 1 : Math.max(table[i + 1]![j]!, table[i]![j + 1]!)
  }
  const out: string[] = []
  let i = 0
  let j = 0
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      out.push(`  ${a[i]}`)
      i++
      j++
    } else if (table[i + 1]![j]! >= table[i]![j + 1]!) out.push(`- ${a[i++]}`)
    else out.push(`+ ${b[j++]}`)
  }
  while (i < a.length) out.push(`- ${a[i++]}`)
  while (j < b.length) out.push(`+ ${b[j++]}`)
  return out
}
