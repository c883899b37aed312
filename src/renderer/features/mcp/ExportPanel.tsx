import type { HostExport } from '../../../shared/contract/mcp'
import { ErrorBox } from '../../components/ErrorBox'
import { useCall, useCallMutation, useInvalidateOn } from '../../hooks'

const HOST_LABELS: Record<HostExport['host'], string> = {
  'claude-desktop': 'Claude Desktop',
  'claude-code': 'Claude Code',
  vscode: 'VS Code',
  cursor: 'Cursor'
}

/** Claude Code's own form of the tool filters: deny rules in its settings, and what only the launcher can enforce. */
function PermissionRules({ permissions }: { permissions: NonNullable<HostExport['permissions']> }) {
  return (
    <div className="hint" data-testid="mcp-export-permissions">
      Tool filters as Claude Code&apos;s deny rules in <code>{permissions.path}</code>
      {permissions.added.length + permissions.removed.length > 0
        ? `: ${[...permissions.added.map((rule) => `+${rule}`), ...permissions.removed.map((rule) => `-${rule}`)].join(' ')}`
        : ': up to date'}
      {permissions.diff.length > 0 && <pre className="mcp-diff">{permissions.diff.join('\n')}</pre>}
      {permissions.launcherOnly.length > 0 && (
        <div>
          Enforced by the launcher alone (Claude Code has no rule for it): {permissions.launcherOnly.join('; ')}
        </div>
      )}
    </div>
  )
}

function HostFile({ file }: { file: HostExport }) {
  const apply = useCallMutation('mcp.exportToHost', ['mcp.hostExports'])
  const changes = [
    ...file.added.map((name) => `+${name}`),
    ...file.updated.map((name) => `~${name}`),
    ...file.removed.map((name) => `-${name}`)
  ]
  return (
    <li data-testid={`mcp-export-${file.host}`}>
      <strong>{HOST_LABELS[file.host]}</strong> <code>{file.path}</code> {file.exists ? '' : '(not created yet)'}
      <div className="hint">In it now: {file.servers.length ? file.servers.join(', ') : 'no servers'}</div>
      {file.error && <div className="error-box">{file.error}</div>}
      {file.conflicts.length > 0 && (
        <div className="hint">
          Left alone (the host&apos;s own entries of the same name): {file.conflicts.join(', ')}
        </div>
      )}
      {file.permissions && <PermissionRules permissions={file.permissions} />}
      {file.diff.length === 0 && (file.permissions?.diff.length ?? 0) === 0 && !file.error ? (
        <div className="hint">Up to date: an export would change nothing.</div>
      ) : (
        !file.error && (
          <details>
            <summary>An export would change: {changes.join(' ')}</summary>
            <pre className="mcp-diff" data-testid={`mcp-export-diff-${file.host}`}>
              {file.diff.join('\n')}
            </pre>
            <button
              type="button"
              onClick={() =>
                apply.mutate({
                  host: file.host,
                  beforeDigest: file.beforeDigest,
                  ...(file.permissions ? { permissionsDigest: file.permissions.beforeDigest } : {})
                })
              }
              disabled={apply.isPending}
              data-testid={`mcp-export-apply-${file.host}`}
            >
              Write to {HOST_LABELS[file.host]}
            </button>
          </details>
        )
      )}
      <ErrorBox error={apply.error} />
    </li>
  )
}

/**
 * Other hosts start our servers through `syncscope mcp run`: their files get entries calling the launcher (absolute
 * paths, no secret); secrets and tokens stay in our store.
 */
export function ExportPanel() {
  const exports = useCall('mcp.hostExports', {})
  useInvalidateOn('mcp.changed', ['mcp.hostExports'])
  return (
    <div className="mcp-export" data-testid="mcp-export">
      <h3>Use these servers in other apps</h3>
      <p className="hint">
        Each app&apos;s entry runs <code>syncscope mcp run &lt;server&gt;</code>, which brings the secrets and fresh
        tokens; none is written into the app&apos;s file.
      </p>
      <ErrorBox error={exports.error} />
      <ul>
        {exports.data?.map((file) => (
          <HostFile key={file.host} file={file} />
        ))}
      </ul>
    </div>
  )
}
