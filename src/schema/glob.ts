/**
 * @module Name globs, as config writes them (`WEATHER_*`, `tell-*`): `*` stands for any run of
 * characters, everything else is literal. One matcher for the allowlist and tool policy.
 */

/** True when `name` matches `pattern`, in time linear in their lengths (no regular expression). */
export function globMatches(pattern: string, name: string): boolean {
  const parts = pattern.split('*');
  if (parts.length === 1) return pattern === name;
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (name.length < first.length + last.length || !name.startsWith(first) || !name.endsWith(last)) {
    return false;
  }
  // Each middle part at its leftmost place after the previous one leaves the most room for the rest.
  let at = first.length;
  const end = name.length - last.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const part = parts[i]!;
    const found = name.indexOf(part, at);
    if (found === -1 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

/** True when some pattern of `patterns` matches `name`. */
export function anyGlobMatches(patterns: readonly string[], name: string): boolean {
  for (const pattern of patterns) if (globMatches(pattern, name)) return true;
  return false;
}
