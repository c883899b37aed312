/** Bytes of a chosen file read at most (the contract takes recordings up to 40 MB, bundles up to 200 MB). */
const MAX_FILE_BYTES = 200_000_000

/** A file the person chose, as text; an Error naming it when it is too large to send. */
export async function fileText(file: File): Promise<{ name: string; text: string }> {
  if (file.size > MAX_FILE_BYTES) throw new Error(`${file.name} is larger than ${MAX_FILE_BYTES / 1_000_000} MB`)
  return { name: file.name, text: await file.text() }
}
