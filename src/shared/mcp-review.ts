import type { Placeholder, WorkspaceReview } from './contract/mcp'

/** A placeholder as the person reads it, in the review of a workspace file. */
export function describePlaceholder(placeholder: Placeholder): string {
  switch (placeholder.kind) {
    case 'env':
      return `environment variable ${placeholder.name}`
    case 'userHome':
      return 'your home folder'
    case 'keychain':
      return `the stored secret ${placeholder.name}`
    case 'input':
      return `the input ${placeholder.name}`
  }
}

/** Whether the file's entry gets the stored secrets of the person's own entry it overrides, in one sentence. */
export function describeOverride(
  name: string,
  overrides: NonNullable<WorkspaceReview['servers'][number]['overrides']>
): string {
  const own = `${name} of ${overrides.path ?? overrides.source} (${overrides.target ?? '?'})`
  return overrides.sameTarget
    ? `overrides ${own}: the same server, so it gets that entry's stored secrets and tokens`
    : `overrides ${own}: it gets none of that entry's stored secrets or tokens`
}

/** The state of the file's approval, after its path. */
export function describeApproval(review: Pick<WorkspaceReview, 'state' | 'approvedAt'>): string {
  if (review.state === 'trusted') return `approved on ${review.approvedAt}`
  if (review.state === 'changed') return `changed since you approved it (${review.approvedAt}): not approved`
  return 'not approved'
}
