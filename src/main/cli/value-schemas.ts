import { z } from 'zod'

// Each takes the name a person gave the value by: a flag (`--port`) or a variable (`ELECTRIC_PORT`).
export const portSchema = (name: string) =>
  z.coerce
    .number({ error: `${name} must be a number` })
    .int(`${name} must be a whole number`)
    .min(0, `${name} must be 0–65535`)
    .max(65535, `${name} must be 0–65535`)

export const secondsSchema = (name: string) =>
  z.coerce
    .number({ error: `${name} must be a number of seconds` })
    .int(`${name} must be a whole number of seconds`)
    .min(0, `${name} must be 0 or more seconds`)
    .max(31_536_000, `${name} must be at most a year (31536000 seconds)`)

export const countSchema = (name: string) =>
  z.coerce
    .number({ error: `${name} must be a number` })
    .int(`${name} must be a whole number`)
    .min(1, `${name} must be at least 1`)

export const chunkBytesSchema = (name: string) =>
  z.coerce
    .number({ error: `${name} must be a number of bytes` })
    .int(`${name} must be a whole number of bytes`)
    .min(1_000, `${name} must be at least 1000`)

const SIZE_UNITS: Record<string, number> = { '': 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40 }

/** `500MB`, `20G`, `1.5GiB`, `1000000` (bytes), or a number of bytes: K, M, G and T are powers of 1024. */
export const sizeSchema = (name: string) =>
  z.union([z.number(), z.string()]).transform((value, ctx) => {
    const match = typeof value === 'string' ? /^(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?$/i.exec(value.trim()) : null
    const bytes =
      typeof value === 'number'
        ? value
        : match
          ? Math.floor(Number(match[1]) * (SIZE_UNITS[(match[2] ?? '').toLowerCase()] ?? NaN))
          : NaN
    if (!Number.isSafeInteger(bytes) || bytes < 1024 * 1024) {
      ctx.addIssue({
        code: 'custom',
        message: `${name} ${value} is not a size of at least 1 MiB: give bytes or a number with K, M, G or T, e.g. 500MB or 20GB`
      })
      return z.NEVER
    }
    return bytes
  })
