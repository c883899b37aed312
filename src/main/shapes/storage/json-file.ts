/** The value of a JSON file's text, or null when it is not JSON (a damaged file, checked by its schema next). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}
