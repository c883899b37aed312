import type { ApiError } from '../api'

/** A failed call shown with its code and message. */
export function ErrorBox({ error }: { error: ApiError | Error | null | undefined }) {
  if (!error) return null
  const code = 'code' in error ? (error as ApiError).code : undefined
  return (
    <div className="error-box" role="alert">
      {code && <strong>{code}: </strong>}
      {error.message}
    </div>
  )
}
