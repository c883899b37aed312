import { z } from 'zod'
import {
  buildSubsetRequest,
  ShapeStreamError,
  SubsetSchema,
  type Subset,
  type SubsetMethod
} from '../../../shared/shape-client'
import type { SessionConfig } from './session'

/** The Subset panel's fields as typed: numbers stay text until sent, so a half-typed limit is not lost. */
export interface SubsetForm {
  where: string
  params: Array<{ key: string; value: string }>
  orderBy: string
  limit: string
  offset: string
}

export const EMPTY_SUBSET_FORM: SubsetForm = { where: '', params: [], orderBy: '', limit: '', offset: '' }

/** Longest URL the local server accepts (docs/protocol.md): a GET subset beyond it gets 414. */
export const MAX_URL_LENGTH = 8_192

const optionalNumber = (text: string): number | undefined => (text.trim() === '' ? undefined : Number(text))
const optionalText = (text: string): string | undefined => (text.trim() === '' ? undefined : text)

export function subsetOf(form: SubsetForm): Subset {
  const params = form.params.filter((param) => param.key.trim() !== '')
  return {
    where: optionalText(form.where),
    params: params.length > 0 ? Object.fromEntries(params.map((param) => [param.key.trim(), param.value])) : undefined,
    orderBy: optionalText(form.orderBy),
    limit: optionalNumber(form.limit),
    offset: optionalNumber(form.offset)
  }
}

/** The request the stream would send now, for the preview: the JSON body (POST) and the URL (GET). */
export function previewSubsetRequest(
  config: Pick<SessionConfig, 'url' | 'params'>,
  protocolParams: Record<string, string>,
  subset: Subset
): { body: string; getUrl: string } {
  const params = { ...config.params, ...protocolParams }
  // the preview shows the body and URL only: headers (a proxy's token, resolved per request) are left out
  const request = { url: config.url, params, headers: {}, subset }
  const post = buildSubsetRequest({ ...request, method: 'POST' })
  const body = JSON.stringify(JSON.parse(String(post.init.body)), null, 2)
  return { body, getUrl: buildSubsetRequest({ ...request, method: 'GET' }).url }
}

/** The form field a complaint belongs to (the server names body fields; the client schema names Subset fields). */
export type SubsetField = 'where' | 'params' | 'order_by' | 'limit' | 'offset'
const SUBSET_FIELDS: readonly string[] = ['where', 'params', 'order_by', 'limit', 'offset']
const isSubsetField = (name: string): name is SubsetField => SUBSET_FIELDS.includes(name)
const fieldOfSchemaPath = (name: string): SubsetField =>
  name === 'orderBy' ? 'order_by' : isSubsetField(name) ? name : 'where'

export type FieldErrors = Partial<Record<SubsetField, string>>

/** The subset the form describes, or what the client's schema says is wrong with it (before anything is sent). */
export function parseSubsetForm(
  form: SubsetForm
): { subset: Subset; fields: null } | { subset: null; fields: FieldErrors } {
  const parsed = SubsetSchema.safeParse(subsetOf(form))
  if (parsed.success) return { subset: parsed.data, fields: null }
  return {
    subset: null,
    fields: Object.fromEntries(
      parsed.error.issues.map((issue) => [fieldOfSchemaPath(String(issue.path[0])), issue.message])
    )
  }
}

export interface SubsetFailure {
  /** Complaints about single fields, shown next to them. */
  fields: FieldErrors
  /** The rest, shown above the result. */
  message: string | null
  status: number | null
  /** A GET the server found too long: the remedy is POST. */
  tooLong: boolean
}

const ServerErrorsSchema = z.object({
  errors: z.object({ subset: z.record(z.string(), z.union([z.array(z.string()), z.string()])) })
})

/** What went wrong with a subset request, the server's validation errors sorted onto the form's fields. */
export function subsetFailureOf(error: unknown, method: SubsetMethod): SubsetFailure {
  if (!(error instanceof ShapeStreamError))
    return { fields: {}, message: (error as Error).message, status: null, tooLong: false }
  const failure: SubsetFailure = {
    fields: {},
    message: null,
    status: error.status,
    tooLong: error.status === 414 && method === 'GET'
  }
  const server = ServerErrorsSchema.safeParse(error.json)
  if (!server.success) return { ...failure, message: error.message }
  for (const [field, messages] of Object.entries(server.data.errors.subset)) {
    const text = Array.isArray(messages) ? messages.join('; ') : messages
    if (isSubsetField(field)) failure.fields[field] = text
    else failure.message = `${field}: ${text}`
  }
  return failure
}
