import { existsSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'

/** The project's `resources/` folder, found upwards from this module (works from src/ under tsx and from out/ when built). */
function findResourcesDir(): string {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const candidate = join(dir, 'resources')
    if (existsSync(join(candidate, 'demo'))) return candidate
  }
  return resolve(process.cwd(), 'resources')
}

const resourcesDir = findResourcesDir()

export const resourcePath = (relative: string): string => join(resourcesDir, relative)
