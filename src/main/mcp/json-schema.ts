import type { JsonSchemaType, JsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js'

type Validator = { getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> }
let loading: Promise<Validator> | null = null

/** Each way `value` violates `schema` (none when it conforms). Ajv loads on first use, not at start-up (the CLI). */
export async function schemaViolations(schema: Record<string, unknown>, value: unknown): Promise<string[]> {
  loading ??= import('@modelcontextprotocol/sdk/validation/ajv').then(
    ({ AjvJsonSchemaValidator }) => new AjvJsonSchemaValidator()
  )
  const check = (await loading).getValidator(schema as JsonSchemaType)(value)
  return check.valid ? [] : (check.errorMessage ?? 'does not match the schema').split(', ')
}
