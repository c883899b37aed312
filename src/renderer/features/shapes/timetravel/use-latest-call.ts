import { useEffect, useRef, useState } from 'react'
import type { CallInput, CallName, CallOutput } from '../../../../shared/contract'
import { api, type ApiError } from '../../../api'

interface Answered<N extends CallName> {
  key: string
  data: CallOutput<N> | undefined
  error: ApiError | null
}

/**
 * A call for the latest input only: one in flight at a time, and the inputs given meanwhile dropped but the last. A
 * scrubber dragged through a million messages has main work out the point where it rests, not every point it passed.
 * The last answer stays while the next is on its way (`pending`).
 */
export function useLatestCall<N extends CallName>(name: N, input: CallInput<N> | null) {
  const key = input === null ? null : JSON.stringify(input)
  const [answered, setAnswered] = useState<Answered<N> | null>(null)
  const wanted = useRef<{ key: string; input: CallInput<N> } | null>(null)
  const running = useRef(false)
  const mounted = useRef(true)
  useEffect(
    () => () => {
      mounted.current = false
    },
    []
  )
  useEffect(() => {
    wanted.current = key === null || input === null ? null : { key, input }
    if (running.current) return
    running.current = true
    void (async () => {
      let done: string | null = null
      while (mounted.current && wanted.current && wanted.current.key !== done) {
        const next = wanted.current
        done = next.key
        try {
          const data = await api.call(name, next.input)
          if (mounted.current) setAnswered({ key: next.key, data, error: null })
        } catch (error) {
          if (mounted.current) setAnswered((last) => ({ key: next.key, data: last?.data, error: error as ApiError }))
        }
      }
      running.current = false
    })()
    // the input is the key's: a new object of the same content asks nothing new
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [name, key])
  return {
    data: answered?.data,
    error: answered?.key === key ? answered.error : null,
    pending: key !== null && answered?.key !== key
  }
}
