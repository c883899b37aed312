import { useEffect, useState } from 'react'
import { ErrorBox } from '../../components/ErrorBox'
import { useCall, useCallMutation } from '../../hooks'

/** The config file as text: saved only when it is a good config, otherwise every issue is listed with its path. */
export function ConfigEditor() {
  const config = useCall('proxy.config', {})
  const save = useCallMutation('proxy.saveConfig', ['proxy.status', 'proxy.config'])
  const [text, setText] = useState('')
  useEffect(() => {
    if (config.data) setText(config.data.text)
  }, [config.data])
  return (
    <section className="panel" aria-label="Config">
      <h2>Config {config.data && <code>{config.data.path}</code>}</h2>
      <ErrorBox error={config.error} />
      <textarea
        className="sql-input config-text"
        rows={18}
        value={text}
        onChange={(event) => setText(event.target.value)}
        spellCheck={false}
        aria-label="Proxy config"
      />
      <div className="toolbar">
        <button onClick={() => save.mutate({ text })} disabled={save.isPending}>
          Save config
        </button>
        {save.isSuccess && !save.isPending && <span className="badge ok">saved and in force</span>}
      </div>
      <div data-testid="config-error">
        <ErrorBox error={save.error} />
      </div>
    </section>
  )
}
