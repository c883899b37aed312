/** Adds `member` to the set of `key` (made when missing), or removes it (a set left empty is dropped). */
export function setMember<K, V>(map: Map<K, Set<V>>, key: K, member: V, present: boolean): void {
  const members = map.get(key)
  if (present) {
    if (members) members.add(member)
    else map.set(key, new Set([member]))
  } else if (members) {
    members.delete(member)
    if (members.size === 0) map.delete(key)
  }
}
