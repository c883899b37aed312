import { useState } from 'react'
import type { WorkbenchSettings } from '../../../shared/contract/shapes-workbench'
import { ErrorBox } from '../../components/ErrorBox'
import { useCall, useCallMutation } from '../../hooks'

/** Saved shapes: save the composed one under a name, load or delete saved ones. */
export function SavedShapes({
  settings,
  onLoad
}: {
  settings: WorkbenchSettings
  onLoad(settings: WorkbenchSettings): void
}) {
  const saved = useCall('shapesWorkbench.saved', {})
  const save = useCallMutation('shapesWorkbench.save', ['shapesWorkbench.saved'])
  const remove = useCallMutation('shapesWorkbench.delete', ['shapesWorkbench.saved'])
  const [name, setName] = useState('')
  return (
    <section className="saved-shapes" aria-label="Saved shapes">
      <h2>Saved shapes</h2>
      <form
        className="inline-form"
        onSubmit={(event) => {
          event.preventDefault()
          save.mutate({ ...settings, name })
        }}
      >
        <label>
          name
          <input aria-label="shape name" value={name} onChange={(event) => setName(event.target.value)} />
        </label>
        <button type="submit" disabled={!name.trim() || !settings.definition.table || save.isPending}>
          Save
        </button>
      </form>
      <p className="muted">Credential headers and secrets are not saved.</p>
      <ErrorBox error={save.error ?? remove.error ?? saved.error} />
      <ul>
        {saved.data?.map((shape) => (
          <li key={shape.id}>
            <button
              type="button"
              className="link"
              onClick={() => {
                onLoad({ definition: shape.definition, live: shape.live, offset: shape.offset, target: shape.target })
                setName(shape.name)
              }}
              title="Load into Compose"
            >
              {shape.name}
            </button>{' '}
            <code>{shape.definition.table}</code> {shape.definition.where && <code>{shape.definition.where}</code>}
            <button
              type="button"
              className="secondary small"
              aria-label={`Delete ${shape.name}`}
              onClick={() => remove.mutate({ id: shape.id })}
            >
              Delete
            </button>
          </li>
        ))}
      </ul>
    </section>
  )
}
