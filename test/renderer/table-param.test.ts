import { describe, expect, it } from 'vitest'
import { tableParam } from '../../src/renderer/features/shapes/table-param'

describe('tableParam: the `table` parameter the workbench sends for a table', () => {
  it.each([
    ['public', 'issues', 'issues'],
    ['public', 'issue_watchers', 'issue_watchers'],
    ['public', 'with$dollar', 'with$dollar'],
    ['public', 'UserSettings', '"UserSettings"'],
    ['public', 'order items', '"order items"'],
    ['public', '1st', '"1st"'],
    ['public', 'say "hi"', '"say ""hi"""'],
    ['public', 'naïve', '"naïve"'],
    ['audit', 'events', 'audit.events'],
    ['Audit', 'events', '"Audit".events'],
    ['audit', 'Events', 'audit."Events"'],
    ['my schema', 'a.b', '"my schema"."a.b"']
  ])('%s.%s → %s', (schema, name, expected) => {
    expect(tableParam({ schema, name })).toBe(expected)
  })

  it('keeps a dot inside a quoted public name from reading as schema.name', () => {
    expect(tableParam({ schema: 'public', name: 'a.b' })).toBe('"a.b"')
  })
})
