import type { WorkspaceReview } from '../../../shared/contract/mcp'
import { describeApproval, describeOverride, describePlaceholder } from '../../../shared/mcp-review'
import { ErrorBox } from '../../components/ErrorBox'
import { useCall, useCallMutation, useInvalidateOn } from '../../hooks'

const REFRESHED = ['mcp.list', 'mcp.workspaceReview', 'mcp.hostExports'] as const

function ReviewedServer({ server }: { server: WorkspaceReview['servers'][number] }) {
  return (
    <li data-testid={`mcp-trust-server-${server.name}`}>
      <strong>{server.name}</strong> <small>{server.transport ?? 'transport ?'}</small>{' '}
      <code className="mcp-url">{server.target ?? '?'}</code>
      {server.asks.length > 0 && (
        <div data-testid={`mcp-trust-asks-${server.name}`}>
          asks for: {server.asks.map(describePlaceholder).join(', ')}
        </div>
      )}
      {server.overrides && (
        <div className={server.overrides.sameTarget ? 'hint' : 'warn'}>
          {describeOverride(server.name, server.overrides)}
        </div>
      )}
    </li>
  )
}

/**
 * The workspace mcp.json runs nothing until the person approves it: what its servers are, where they go and what
 * they ask for (environment variables, the home folder, stored secrets), and which of the person's own servers they
 * override. The approval is of this content: a change to the file asks again.
 */
export function WorkspaceTrust() {
  const review = useCall('mcp.workspaceReview', {})
  useInvalidateOn('mcp.changed', ['mcp.workspaceReview'])
  const approve = useCallMutation('mcp.approveWorkspace', REFRESHED)
  const revoke = useCallMutation('mcp.revokeWorkspace', REFRESHED)
  const file = review.data
  if (!file) return <ErrorBox error={review.error} />
  if (file.state === 'trusted')
    return (
      <p className="hint" data-testid="mcp-trust">
        <code>{file.path}</code>: {describeApproval(file)}.{' '}
        <button
          type="button"
          onClick={() => revoke.mutate({})}
          disabled={revoke.isPending}
          data-testid="mcp-trust-revoke"
        >
          Take the approval back
        </button>
        <ErrorBox error={revoke.error} />
      </p>
    )
  return (
    <section className="panel mcp-trust" aria-label="Workspace approval" data-testid="mcp-trust">
      <h2>
        {file.state === 'changed' ? 'The workspace mcp.json changed since you approved it' : 'Approve this workspace?'}
      </h2>
      <p>
        <code>{file.path}</code> ({describeApproval(file)}) names the servers below. None of them is connected or
        started, and nothing in it is filled in (environment variables, your home folder, stored secrets), until you
        approve this content. Approve it only if you trust where it came from.
      </p>
      {file.error && <div className="error-box">{file.error}</div>}
      <ul data-testid="mcp-trust-servers">
        {file.servers.map((server) => (
          <ReviewedServer key={server.name} server={server} />
        ))}
      </ul>
      <p className="hint">sha256 {file.sha256}</p>
      <button
        type="button"
        onClick={() => approve.mutate({ sha256: file.sha256 })}
        disabled={approve.isPending}
        data-testid="mcp-trust-approve"
      >
        Approve this content
      </button>
      <ErrorBox error={approve.error} />
    </section>
  )
}
