import { clientStreams } from './client-stream'
import { TimeTravelInputError, type ReadLog } from './log'
import { readInput } from './verify'

/**
 * The log a client received, as its recording shows it (a workbench session, a HAR, a tap's recording): the messages
 * of its shape from its last start at `-1`, each at the position the client could know (subset rows left out: they
 * are not in the shape's log). What a client of a service whose own log cannot be read (a proxy, another service) saw.
 */
export function receivedLog(name: string, text: string): ReadLog {
  const { input } = readInput(name, text)
  const streams = clientStreams(input)
  const stream = streams[0]
  if (!stream)
    throw new TimeTravelInputError(
      `${name} holds no shape requests (none carries protocol headers or asks for an offset): record while the app syncs`
    )
  if (streams.length > 1)
    throw new TimeTravelInputError(
      `${name} holds ${streams.length} shapes (${streams.map((one) => one.url).join(', ')}): time travel follows one`
    )
  const records = stream.records
    .filter((record) => !record.subset)
    .map(({ offset, exact, after, message }) => ({ offset, exact, message, ...(after ? { after } : {}) }))
  const notes = [...stream.notes]
  if (stream.requests.length > 0 && !stream.ranges.some((range) => range.from === '-1'))
    notes.unshift('the recording does not reach back to the request from -1: the rows lack what came before it')
  return {
    source: { kind: 'recording', description: `what the client of ${name} received` },
    url: stream.url,
    definition: stream.target.definition,
    handle: stream.handle,
    server: stream.server,
    records,
    end: stream.lastOffset,
    complete: false,
    notes
  }
}
