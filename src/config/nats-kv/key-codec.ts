/**
 * @module How a config item's `type/key` becomes a JetStream KV key.
 *
 * KV keys allow `[-/_=.a-zA-Z0-9]`, and `.` separates subject tokens (so a watch can filter on
 * `tool.*`). The KV key is `<type>.<key>` with each part escaped: every character outside `[A-Za-z0-9_-]`
 * is written `=XX` (its UTF-8 bytes in upper-case hex), so a `.` or `=` inside a type or key can never
 * be read as the separator or an escape:
 *
 * | item                          | KV key                        |
 * |-------------------------------|-------------------------------|
 * | `tool-service/joke-service`   | `tool-service.joke-service`   |
 * | `tool/tell-joke`              | `tool.tell-joke`              |
 * | `tool/v1.2`                   | `tool.v1=2E2`                 |
 * | `mcp/a=b`                     | `mcp.a=3Db`                   |
 *
 * `/` is not used as the separator: it is a legal KV key character but not a subject token boundary.
 */

const PLAIN = /^[A-Za-z0-9_-]$/;
const ESCAPE = /=([0-9A-F]{2})/g;

/** Escapes one part (a type or a key) for a KV key. */
export function encodeKeyPart(part: string): string {
  let out = '';
  for (const char of part) {
    if (PLAIN.test(char)) {
      out += char;
      continue;
    }
    for (const byte of new TextEncoder().encode(char)) {
      out += '=' + byte.toString(16).toUpperCase().padStart(2, '0');
    }
  }
  return out;
}

/** Reverses {@link encodeKeyPart}. */
export function decodeKeyPart(encoded: string): string {
  if (!encoded.includes('=')) return encoded;
  const bytes: number[] = [];
  let last = 0;
  const chunks: string[] = [];
  const flush = (): void => {
    if (bytes.length) chunks.push(new TextDecoder().decode(new Uint8Array(bytes)));
    bytes.length = 0;
  };
  for (const match of encoded.matchAll(ESCAPE)) {
    const at = match.index;
    if (at > last) {
      flush();
      chunks.push(encoded.slice(last, at));
    }
    bytes.push(parseInt(match[1] as string, 16));
    last = at + match[0].length;
  }
  flush();
  chunks.push(encoded.slice(last));
  return chunks.join('');
}

/** The KV key of an item. */
export function toKvKey(type: string, key: string): string {
  return `${encodeKeyPart(type)}.${encodeKeyPart(key)}`;
}

/** The item `type` and `key` of a KV key, or undefined for a key not written by this store. */
export function fromKvKey(kvKey: string): { type: string; key: string } | undefined {
  const dot = kvKey.indexOf('.');
  if (dot <= 0 || dot === kvKey.length - 1 || kvKey.indexOf('.', dot + 1) !== -1) return undefined;
  return { type: decodeKeyPart(kvKey.slice(0, dot)), key: decodeKeyPart(kvKey.slice(dot + 1)) };
}
