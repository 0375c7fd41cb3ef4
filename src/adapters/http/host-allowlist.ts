/**
 * @module The HTTP tool's host allowlist.
 */

/**
 * True when `hostname` matches one of `allowed`: an exact host name or IP address (case-insensitive),
 * or `*.example.com` for any subdomain of `example.com` (not `example.com` itself).
 */
export function isHostAllowed(hostname: string, allowed: readonly string[]): boolean {
  const host = hostname
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
  return allowed.some((entry) => {
    const rule = entry
      .toLowerCase()
      .replace(/^\[(.*)\]$/, '$1')
      .replace(/\.$/, '');
    if (rule.startsWith('*.')) return host.endsWith(rule.slice(1)) && host.length > rule.length - 1;
    return host === rule;
  });
}
