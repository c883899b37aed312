import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { formatJunit } from '../../src/main/checker/format'
import { findingFor } from '../../src/main/checker/context'
import { RULES, type FindingId } from '../../src/main/checker/rules'
import type { ConformanceReport } from '../../src/shared/contract/checker'

/** GitHub's anchor of a markdown heading. */
const slug = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, '')
    .replaceAll(' ', '-')

describe('the checker’s rule catalogue', () => {
  const anchors = new Set(
    readFileSync(resolve(__dirname, '../../docs/protocol.md'), 'utf8')
      .split('\n')
      .filter((line) => /^#{2,3} /.test(line))
      .map((line) => `#${slug(line.replace(/^#+ /, ''))}`)
  )

  it('links every finding to a section docs/protocol.md has', () => {
    const broken = Object.entries(RULES).filter(([, rule]) => !anchors.has(rule.section))
    expect(broken.map(([id, rule]) => `${id} → ${rule.section}`)).toEqual([])
  })

  it('names the header brand in rules and fixes', () => {
    const finding = findingFor('headers.missing', 'm', [], 'electric')
    expect(finding.rule.text).toContain('`electric-handle`')
    expect(finding.fix).toContain('`electric-*`')
    expect(finding.rule.doc).toBe('docs/protocol.md#header-brand')
    expect(findingFor('sync.no-progress' as FindingId, 'm', [], 'service').fix).toBeNull()
  })

  it('JUnit: failures name their finding ids and text is escaped', () => {
    const finding = findingFor('sse.buffered', 'frames held <until> the "end" & later', [], 'service')
    const report: ConformanceReport = {
      url: 'http://h/v1/shape?table=a&b',
      headerBrand: 'service',
      table: 'a',
      writeTable: null,
      startedAt: '2026-01-01T00:00:00.000Z',
      ms: 1500,
      checks: [
        { id: 'sse', title: 'SSE', status: 'fail', reason: null, findings: [finding], ms: 1000 },
        { id: 'must-refetch', title: 'DELETE', status: 'skip', reason: 'needs --write-sql', findings: [], ms: 0 }
      ],
      summary: { pass: 0, fail: 1, warn: 0, skip: 1, error: 0 }
    }
    const xml = formatJunit(report)
    expect(xml).toContain(
      'name="syncscope check http://h/v1/shape?table=a&#38;b" tests="2" failures="1" errors="0" skipped="1" time="1.500"'
    )
    expect(xml).toContain('<failure message="sse.buffered" type="sse.buffered">')
    expect(xml).toContain('frames held &#60;until&#62; the &#34;end&#34; &#38; later')
    expect(xml).toContain('<skipped message="needs --write-sql"/>')
  })
})
