import { z } from 'zod'
import { subsetParam } from '../protocol'
import { errorForStatus, ShapeStreamError } from './errors'
import { ChangeMessageSchema, type ChangeMessage } from './messages'
import { readProtocolHeaders } from './protocol-headers'
import { utf8Length, type HeaderList, type ShapeRecorder } from './recorder'
import { SnapshotMetadataSchema, type SnapshotMetadata } from './snapshot-tracker'

/** A subset of a shape: rows matching `where` (narrowing the shape's own where), ordered and paged. */
export const SubsetSchema = z
  .object({
    where: z.string().optional(),
    params: z
      .record(z.string().regex(/^\d+$/), z.string(), {
        // zod names a bad key only "Invalid key in record"
        error: (issue) => (issue.code === 'invalid_key' ? 'params keys are placeholder numbers' : undefined)
      })
      .optional(),
    limit: z.number().int().positive().optional(),
    offset: z.number().int().nonnegative().optional(),
    orderBy: z.string().optional()
  })
  .refine((subset) => (subset.limit === undefined && subset.offset === undefined) || !!subset.orderBy, {
    message: 'orderBy is required with limit or offset',
    path: ['orderBy']
  })
export type Subset = z.infer<typeof SubsetSchema>

/** `POST` sends the subset as a JSON body (recommended); `GET` as legacy `subset__*` parameters (414 when too long). */
export type SubsetMethod = 'POST' | 'GET'

export const SubsetResponseSchema = z.object({ metadata: SnapshotMetadataSchema, data: z.array(ChangeMessageSchema) })

export interface SubsetResult {
  metadata: SnapshotMetadata
  rows: ChangeMessage[]
  handle: string | null
  /** The log offset the rows are consistent with (the response's offset header). */
  offset: string | null
  status: number
  /** The recorder's id of the exchange (-1 without a recorder). */
  requestId: number
}

export interface SubsetRequest {
  /** The shape endpoint. */
  url: string
  /** Shape definition and protocol parameters (table, where, handle, offset, log…), already resolved. */
  params: Record<string, string>
  headers: Record<string, string>
  subset: Subset
  method: SubsetMethod
}

/** The HTTP request for a subset: the shape stays in the URL, the subset goes in the body (POST) or `subset__*`. */
export function buildSubsetRequest(request: SubsetRequest): { url: string; init: RequestInit } {
  const url = new URL(request.url)
  for (const [name, value] of Object.entries(request.params)) url.searchParams.set(name, value)
  const { where, params, limit, offset, orderBy } = request.subset
  if (request.method === 'GET') {
    const legacy: Array<[string, string | undefined]> = [
      [subsetParam('where'), where],
      [subsetParam('params'), params ? JSON.stringify(params) : undefined],
      [subsetParam('limit'), limit?.toString()],
      [subsetParam('offset'), offset?.toString()],
      [subsetParam('order_by'), orderBy]
    ]
    for (const [name, value] of legacy) if (value !== undefined) url.searchParams.set(name, value)
    // any subset__ key makes the request a subset, even for a subset with no fields
    if (legacy.every(([, value]) => value === undefined)) url.searchParams.set(subsetParam('where'), 'true')
    url.searchParams.sort()
    return { url: url.toString(), init: { method: 'GET', headers: request.headers } }
  }
  url.searchParams.sort()
  const body = { where: where ?? 'true', params, limit, offset, order_by: orderBy }
  return {
    url: url.toString(),
    init: {
      method: 'POST',
      headers: { ...request.headers, 'content-type': 'application/json' },
      body: JSON.stringify(body)
    }
  }
}

/** Requests a subset snapshot and validates the answer; every step goes to the recorder when one is given. */
export async function fetchSubset(
  request: SubsetRequest,
  options: { recorder?: ShapeRecorder; fetch?: typeof fetch; signal?: AbortSignal } = {}
): Promise<SubsetResult> {
  const parsedSubset = SubsetSchema.safeParse(request.subset)
  if (!parsedSubset.success)
    throw new ShapeStreamError(
      'client',
      `invalid subset: ${parsedSubset.error.issues.map((issue) => issue.message).join('; ')}`,
      request.url
    )
  const { url, init } = buildSubsetRequest({ ...request, subset: parsedSubset.data })
  const recorder = options.recorder
  const requestId =
    recorder?.request(request.method, url, Object.entries(init.headers as Record<string, string>), 'off') ?? -1
  let response: Response
  try {
    response = await (options.fetch ?? globalThis.fetch)(url, { ...init, signal: options.signal })
  } catch (error) {
    recorder?.failure(requestId, (error as Error).message)
    throw new ShapeStreamError('network', `network error: ${(error as Error).message}`, url)
  }
  const headers: HeaderList = [...response.headers.entries()]
  recorder?.response(requestId, { status: response.status, statusText: response.statusText, headers })
  const text = await response.text()
  recorder?.body(requestId, text, utf8Length(text))
  if (!response.ok) throw errorForStatus(url, response.status, text, headers)
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw new ShapeStreamError('protocol', `the subset response is not JSON: ${text.slice(0, 200)}`, url)
  }
  const parsed = SubsetResponseSchema.safeParse(json)
  if (!parsed.success)
    throw new ShapeStreamError(
      'protocol',
      `the subset response is not {metadata, data}: ${parsed.error.issues[0]?.message ?? ''}`,
      url
    )
  for (const row of parsed.data.data) recorder?.message(requestId, row, null)
  const protocol = readProtocolHeaders(response.headers, null)
  return {
    metadata: parsed.data.metadata,
    rows: parsed.data.data,
    handle: protocol.handle,
    offset: protocol.offset,
    status: response.status,
    requestId
  }
}
