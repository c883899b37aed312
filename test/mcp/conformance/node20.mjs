// `node --import ./node20.mjs …/conformance/dist/index.js`: the suite's `import { globSync } from 'fs'` resolves to
// node20-fs.mjs (node:fs plus globSync); every other import, and `fs` of every other package, is untouched.
/* global URL */
import { register } from 'node:module'

const shim = new URL('./node20-fs.mjs', import.meta.url).href
const hooks = `
export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL?.includes('/@modelcontextprotocol/conformance/'))
    return { url: ${JSON.stringify(shim)}, shortCircuit: true }
  return next(specifier, context)
}`
register(`data:text/javascript,${encodeURIComponent(hooks)}`)
