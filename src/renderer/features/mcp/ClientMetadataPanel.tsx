import { useState } from 'react'
import type { ClientMetadataSetting } from '../../../shared/contract/mcp'
import { ErrorBox } from '../../components/ErrorBox'
import { useCallMutation } from '../../hooks'

/**
 * The app's client_id as the HTTPS URL of its client ID metadata document: used with authorisation servers that
 * accept one; the others get dynamic registration, or the server's configured client.
 */
export function ClientMetadataPanel({ setting }: { setting: ClientMetadataSetting }) {
  const save = useCallMutation('mcp.setClientMetadataUrl', ['mcp.list'])
  const [url, setUrl] = useState(setting.url ?? '')
  const fromFlag = setting.source === 'flag'
  return (
    <div className="mcp-client-metadata" data-testid="mcp-client-metadata">
      <h3>OAuth client ID metadata document</h3>
      <p className="hint">
        {setting.url ? (
          <>
            In use: <code data-testid="mcp-client-metadata-current">{setting.url}</code> (
            {fromFlag ? 'from --client-metadata-url, which wins over settings.json' : 'settings.json'}).
          </>
        ) : (
          <span data-testid="mcp-client-metadata-current">
            None: every authorisation server gets a dynamic registration (or the server&apos;s configured client).
          </span>
        )}
      </p>
      <form
        className="inline-form"
        onSubmit={(event) => {
          event.preventDefault()
          save.mutate({ url: url.trim() === '' ? null : url.trim() })
        }}
      >
        <input
          placeholder="https://example.com/oauth/client-metadata.json"
          value={url}
          onChange={(event) => setUrl(event.target.value)}
          disabled={fromFlag}
          data-testid="mcp-client-metadata-url"
        />
        <button type="submit" disabled={fromFlag || save.isPending} data-testid="mcp-client-metadata-save">
          {url.trim() === '' ? 'Remove' : 'Save'}
        </button>
      </form>
      <ErrorBox error={save.error} />
      {setting.document && (
        <details>
          <summary>The document to publish at this URL</summary>
          <p className="hint">
            It lists a loopback callback per server that logs in with it (each server has its own, so an answer is taken
            only for the login it belongs to): publish it again after adding such a server.
          </p>
          <pre className="mcp-diff" data-testid="mcp-client-metadata-document">
            {JSON.stringify(setting.document, null, 2)}
          </pre>
        </details>
      )}
    </div>
  )
}
