/**
 * @module Tool name rules, and a reversible mapping for foreign names (MCP allows `.`, `/`, spaces).
 */
import { createHash } from 'node:crypto';
import { ToolbusError } from '../errors/index.js';

/** What a tool name must match (OpenAI's function-name rule). */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

/** The longest valid tool name. */
export const MAX_TOOL_NAME_LENGTH = 64;

/**
 * Checks a tool name against {@link TOOL_NAME_PATTERN}.
 *
 * @throws {ToolbusError} `invalid-name`, saying what is wrong and pointing to {@link encodeToolName}.
 */
export function validateToolName(name: unknown): asserts name is string {
  if (typeof name !== 'string') {
    throw new ToolbusError(
      'invalid-name',
      `tool name must be a string, got ${name === null ? 'null' : typeof name}`,
    );
  }
  if (TOOL_NAME_PATTERN.test(name)) return;
  const shown = name.length > 80 ? `${name.slice(0, 77)}...` : name;
  let why: string;
  if (name.length === 0) why = 'it is empty';
  else if (name.length > MAX_TOOL_NAME_LENGTH) why = `it is ${name.length} characters long (at most 64)`;
  else {
    const bad = [...new Set([...name].filter((c) => !/[a-zA-Z0-9_-]/.test(c)))].map((c) => JSON.stringify(c));
    why = `it contains ${bad.join(', ')}`;
  }
  throw new ToolbusError(
    'invalid-name',
    `tool name '${shown}' is invalid: ${why}; expected 1-64 characters from a-z, A-Z, 0-9, '_' and '-' ` +
      `(use encodeToolName() for foreign names)`,
  );
}

/**
 * Maps any non-empty name to a valid tool name, reversibly.
 *
 * Scheme:
 * - A name that is already valid and contains no `--` is returned unchanged (`tell-joke`, `get_stock_price`).
 * - Otherwise every character outside `[a-zA-Z0-9_]`, `-` included, becomes `--<hex code point>-`:
 *   `files/read.text` → `files--2f-read--2e-text`, `a--b` → `a--2d---2d-b`. Encoded names always contain
 *   `--` and plain ones never do, so the two sets cannot collide.
 * - If the result is longer than 64 characters it is cut (at a character boundary) to 52 characters and
 *   `--h<8 hex of sha-256>-` is appended. Such a name cannot be decoded from itself: keep the mapping
 *   with a {@link ToolNameMap}.
 *
 * @throws {ToolbusError} `invalid-name` for an empty name.
 * @example
 * ```ts
 * encodeToolName('github.search/issues'); // 'github--2e-search--2f-issues'
 * decodeToolName('github--2e-search--2f-issues'); // 'github.search/issues'
 * ```
 */
export function encodeToolName(foreign: string): string {
  if (foreign.length === 0)
    throw new ToolbusError('invalid-name', 'tool name is empty; expected at least one character');
  if (TOOL_NAME_PATTERN.test(foreign) && !foreign.includes('--')) return foreign;
  const tokens: string[] = [];
  for (const char of foreign) {
    tokens.push(/[a-zA-Z0-9_]/.test(char) ? char : `--${(char.codePointAt(0) ?? 0).toString(16)}-`);
  }
  let encoded = tokens.join('');
  if (encoded.length > MAX_TOOL_NAME_LENGTH) {
    const hash = createHash('sha256').update(foreign).digest('hex').slice(0, 8);
    let head = '';
    for (const token of tokens) {
      if (head.length + token.length > MAX_TOOL_NAME_LENGTH - 12) break;
      head += token;
    }
    encoded = `${head}--h${hash}-`;
  }
  return encoded;
}

/**
 * Reverses {@link encodeToolName}. A name without `--` is returned unchanged.
 *
 * @throws {ToolbusError} `invalid-name` for a malformed encoding, or for a shortened (hashed) name,
 * which only a {@link ToolNameMap} can resolve.
 */
export function decodeToolName(encoded: string): string {
  if (!encoded.includes('--')) return encoded;
  let out = '';
  let i = 0;
  while (i < encoded.length) {
    const char = encoded[i] as string;
    if (char !== '-') {
      out += char;
      i++;
      continue;
    }
    const match = /^--([0-9a-f]{1,6})-/.exec(encoded.slice(i));
    const codePoint = match === null ? NaN : parseInt(match[1] as string, 16);
    if (match === null || codePoint > 0x10ffff) {
      const hashed = /^--h[0-9a-f]{8}-$/.test(encoded.slice(i));
      throw new ToolbusError(
        'invalid-name',
        hashed
          ? `tool name '${encoded}' was shortened with a hash and cannot be decoded by itself; resolve it with the ToolNameMap that encoded it`
          : `tool name '${encoded}' is not a valid encoding: expected '--<hex>-' at position ${i}`,
      );
    }
    out += String.fromCodePoint(codePoint);
    i += match[0].length;
  }
  return out;
}

/**
 * Remembers the foreign name behind each encoded name, so shortened (hashed) names decode too. Use one
 * per source of foreign names (e.g. one per MCP server).
 *
 * @example
 * ```ts
 * const names = new ToolNameMap();
 * const local = names.encode('a.very.long/mcp/tool/name/...');
 * names.decode(local); // the original
 * ```
 */
export class ToolNameMap {
  readonly #foreignByEncoded = new Map<string, string>();

  /** Encodes `foreign` with {@link encodeToolName} and remembers it. */
  encode(foreign: string): string {
    const encoded = encodeToolName(foreign);
    this.#foreignByEncoded.set(encoded, foreign);
    return encoded;
  }

  /** The foreign name behind `encoded`. @throws {ToolbusError} `invalid-name` if unknown and not decodable. */
  decode(encoded: string): string {
    return this.#foreignByEncoded.get(encoded) ?? decodeToolName(encoded);
  }
}
