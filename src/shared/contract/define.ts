import type { z } from 'zod'

/** One call the renderer can make: validated input, validated output. */
export interface CallSpec<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  input: I
  output: O
}

/** One event main pushes to the renderer. */
export interface EventSpec<P extends z.ZodType = z.ZodType> {
  payload: P
}

export const call = <I extends z.ZodType, O extends z.ZodType>(input: I, output: O): CallSpec<I, O> => ({
  input,
  output
})
export const event = <P extends z.ZodType>(payload: P): EventSpec<P> => ({ payload })
