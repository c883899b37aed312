const MAX_IDENTIFIER_BYTES = 63
const UNQUOTED_IDENTIFIER = /^[\p{L}_][\p{L}\p{M}_0-9$]*$/u

/** Always quotes, so reserved words, capitals and odd characters are safe in generated SQL. */
export function quoteIdent(name: string): string {
  if (name.includes('\u0000')) throw new Error('identifier must not contain a NUL character')
  return `"${name.replaceAll('"', '""')}"`
}

export class IdentifierError extends Error {
  override readonly name = 'IdentifierError'
}

function checkLength(name: string): string {
  if (Buffer.byteLength(name, 'utf8') > MAX_IDENTIFIER_BYTES) {
    throw new IdentifierError(`Identifier is too long (max length is ${MAX_IDENTIFIER_BYTES}): ${name}`)
  }
  return name
}

/** Splits on dots outside double quotes, reading each part by Postgres identifier rules. */
function splitIdentifiers(input: string): string[] {
  const parts: string[] = []
  let index = 0
  for (;;) {
    if (input[index] === '"') {
      let name = ''
      index += 1
      for (;;) {
        const quote = input.indexOf('"', index)
        if (quote === -1) throw new IdentifierError(`Invalid identifier with unterminated quote: ${input}`)
        name += input.slice(index, quote)
        if (input[quote + 1] === '"') {
          name += '"'
          index = quote + 2
        } else {
          index = quote + 1
          break
        }
      }
      if (name === '') throw new IdentifierError('Invalid zero-length delimited identifier')
      if (name.includes('\u0000')) throw new IdentifierError('Identifier must not contain a NUL character')
      parts.push(checkLength(name))
    } else {
      const dot = input.indexOf('.', index)
      const raw = input.slice(index, dot === -1 ? undefined : dot)
      if (raw === '') throw new IdentifierError('Invalid zero-length delimited identifier')
      if (raw.includes('"')) throw new IdentifierError(`Invalid identifier with unescaped quote: ${raw}`)
      if (!UNQUOTED_IDENTIFIER.test(raw)) {
        throw new IdentifierError(`Invalid unquoted identifier contains special characters: ${raw}`)
      }
      parts.push(checkLength(raw.replace(/[A-Z]/g, (c) => c.toLowerCase())))
      index = dot === -1 ? input.length : dot
    }
    if (index === input.length) return parts
    if (input[index] !== '.') throw new IdentifierError(`Invalid identifier with unescaped quote: ${input}`)
    index += 1
    if (index === input.length) throw new IdentifierError('Invalid zero-length delimited identifier')
  }
}

/** `items`, `ITEMS`, `public.items`, `"public"."items"` are one relation; `"Items"` is another. */
export function parseTableName(table: string): { schema: string; name: string } {
  if (table === '') throw new IdentifierError('Invalid zero-length delimited identifier')
  const parts = splitIdentifiers(table)
  if (parts.length > 2) throw new IdentifierError(`Invalid relation identifier, too many delimiters: ${table}`)
  const [first, second] = parts
  if (first === undefined) throw new IdentifierError('Invalid zero-length delimited identifier')
  return second === undefined ? { schema: 'public', name: first } : { schema: first, name: second }
}
