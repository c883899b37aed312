import { useState } from 'react'

/**
 * A task the person starts (verify, trace, open): its result, its error, whether it runs. A new run clears the last
 * result and error; the result is kept (`keep`) when it fails, for a panel that shows what it had.
 */
export function useTask<T>(options: { keep?: boolean } = {}) {
  const [result, setResult] = useState<T | null>(null)
  const [error, setError] = useState<Error | null>(null)
  const [busy, setBusy] = useState(false)
  const run = async (task: () => Promise<T>) => {
    setBusy(true)
    setError(null)
    if (!options.keep) setResult(null)
    try {
      setResult(await task())
    } catch (failure) {
      setError(failure as Error)
    } finally {
      setBusy(false)
    }
  }
  return { result, error, busy, run }
}
