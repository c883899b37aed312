import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { SavedShapeInputSchema } from '../../src/shared/contract/shapes-workbench'
import { SavedShapesFileError, SavedShapesStore } from '../../src/main/workbench/saved-shapes'

describe('saved shapes store', () => {
  let dir: string
  let file: string
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'syncscope-saved-'))
    file = join(dir, 'saved-shapes.json')
  })
  afterEach(() => rm(dir, { recursive: true, force: true }))

  const input = (name: string, where = '') =>
    SavedShapeInputSchema.parse({
      name,
      definition: { table: 'issues', where },
      target: {
        kind: 'custom',
        url: 'https://example.com/v1/shape',
        headers: [
          { name: 'Authorization', value: 'Bearer token-of-the-test-user' },
          { name: 'x-tenant', value: 't1' }
        ],
        params: [{ name: 'secret', value: 's3cr3t' }]
      }
    })

  it('saves, replaces by name, lists and deletes, without writing credentials', async () => {
    const store = new SavedShapesStore(file)
    expect(await store.list()).toEqual([])
    const first = await store.save(input('open issues', "status = 'todo'"))
    await store.save(input('other'))
    const replaced = await store.save(input('open issues', "status = 'done'"))
    expect(replaced.id).toBe(first.id)
    const listed = await store.list()
    expect(listed.map((shape) => [shape.name, shape.definition.where])).toEqual([
      ['open issues', "status = 'done'"],
      ['other', '']
    ])
    expect(listed[0]?.target).toEqual({
      kind: 'custom',
      url: 'https://example.com/v1/shape',
      headers: [
        { name: 'Authorization', value: '', redacted: true },
        { name: 'x-tenant', value: 't1', redacted: false }
      ],
      params: [{ name: 'secret', value: '', redacted: true }]
    })
    const text = await readFile(file, 'utf8')
    expect(text).not.toContain('token-of-the-test-user')
    expect(text).not.toContain('s3cr3t')
    expect((await stat(file)).mode & 0o777).toBe(0o600)
    expect(await store.remove(first.id)).toBe(true)
    expect(await store.remove(first.id)).toBe(false)
    expect((await store.list()).map((shape) => shape.name)).toEqual(['other'])
  })

  it('keeps concurrent saves', async () => {
    const store = new SavedShapesStore(file)
    await Promise.all(['a', 'b', 'c', 'd'].map((name) => store.save(input(name))))
    expect((await store.list()).map((shape) => shape.name).sort()).toEqual(['a', 'b', 'c', 'd'])
  })

  it('refuses to read or overwrite a file that is not a saved-shapes file', async () => {
    await writeFile(file, '{"version":1,"shapes":[{"name":1}]}')
    const store = new SavedShapesStore(file)
    await expect(store.list()).rejects.toThrow(SavedShapesFileError)
    await expect(store.save(input('x'))).rejects.toThrow(/is not a saved-shapes file \(shapes\.0\./)
    await writeFile(file, 'not json')
    await expect(store.list()).rejects.toThrow(/is not valid JSON/)
    expect(await readFile(file, 'utf8')).toBe('not json')
  })
})
