import { useEffect } from 'react'
import { useMutation, useQuery, useQueryClient, type UseQueryOptions } from '@tanstack/react-query'
import type { CallInput, CallName, CallOutput, EventName, EventPayload } from '../shared/contract'
import { api, type ApiError } from './api'
import { writeEventToCache } from './event-cache'

/** A contract call as a query, keyed by its name and input. */
export function useCall<N extends CallName>(
  name: N,
  input: CallInput<N>,
  options: Omit<UseQueryOptions<CallOutput<N>, ApiError>, 'queryKey' | 'queryFn'> = {}
) {
  return useQuery<CallOutput<N>, ApiError>({
    queryKey: [name, input],
    queryFn: () => api.call(name, input),
    ...options
  })
}

/** A contract call as a mutation; the named queries are refetched after it succeeds. */
export function useCallMutation<N extends CallName>(name: N, invalidates: readonly CallName[] = []) {
  const client = useQueryClient()
  return useMutation<CallOutput<N>, ApiError, CallInput<N>>({
    mutationFn: (input) => api.call(name, input),
    onSuccess: () => Promise.all(invalidates.map((key) => client.invalidateQueries({ queryKey: [key] })))
  })
}

/** Runs the handler for every event of that name main pushes. */
export function useEvent<N extends EventName>(name: N, handler: (payload: EventPayload<N>) => void): void {
  useEffect(
    () =>
      api.subscribe((event) => {
        if (event.name === name) handler(event.payload as EventPayload<N>)
      }),
    [name, handler]
  )
}

/** Refetches the named queries whenever the event arrives. */
export function useInvalidateOn(name: EventName, queries: readonly CallName[]): void {
  const client = useQueryClient()
  // keyed by the names, not the array, so callers may pass an inline list without resubscribing on every render
  const names = queries.join(' ')
  useEffect(
    () =>
      api.subscribe((event) => {
        if (event.name === name) for (const key of names.split(' ')) void client.invalidateQueries({ queryKey: [key] })
      }),
    [client, name, names]
  )
}

/** Keeps the queries an event carries new state for current from the event itself (see writeEventToCache); mount once. */
export function useEventsIntoCache(): void {
  const client = useQueryClient()
  useEffect(() => api.subscribe((event) => void writeEventToCache(client, event)), [client])
}
