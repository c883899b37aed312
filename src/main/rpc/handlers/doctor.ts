import type { doctorCalls } from '../../../shared/contract/doctor'
import { RpcError } from '../../../shared/contract/errors'
import { diagnoseRecording } from '../../doctor/doctor'
import { RecordingInputError } from '../../doctor/input'
import { redactRecording } from '../../doctor/redact'
import type { HandlersFor } from '../dispatcher'

/** A file the doctor cannot read is the caller's problem: 400 with what is wrong with it. */
function readable<T>(read: () => T): T {
  try {
    return read()
  } catch (error) {
    if (error instanceof RecordingInputError) throw new RpcError('invalid_recording', error.message)
    throw error
  }
}

export function doctorHandlers(): HandlersFor<typeof doctorCalls> {
  return {
    'doctor.analyze': async ({ name, text }) => readable(() => diagnoseRecording(name, text)),
    'doctor.redact': async ({ name, text }) =>
      readable(() => ({
        name: `${name.replace(/\.(har|json)$/i, '')}.redacted.${name.toLowerCase().endsWith('.har') ? 'har' : 'json'}`,
        text: redactRecording(text)
      }))
  }
}
