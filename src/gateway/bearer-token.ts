/**
 * @module The gateway's bearer token check (RFC 6750), in constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * True when `header` is `Bearer <token>` (the scheme in any case, as RFC 7235 allows). Both sides are
 * hashed first, so the comparison takes the same time whatever the length of the guess.
 */
export function bearerTokenMatches(header: string | undefined, token: string): boolean {
  const match = header === undefined ? null : /^bearer +(.*)$/i.exec(header);
  if (!match) return false;
  const given = createHash('sha256')
    .update((match[1] ?? '').trim())
    .digest();
  const expected = createHash('sha256').update(token).digest();
  return timingSafeEqual(given, expected);
}
