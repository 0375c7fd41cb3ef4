/**
 * @module The rule for config item types and keys, shared by every store backend.
 */
import { ToolbusError } from '../errors/index.js';

/**
 * A type or key: 1–128 characters of `[A-Za-z0-9_.=-]`, starting with a letter or digit. This is the
 * intersection of what SQLite, NATS KV keys and file names accept, so an item moves between backends.
 */
export const CONFIG_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.=-]{0,127}$/;

/**
 * Checks a config item's type and key.
 * @throws ToolbusError `invalid-config` naming the bad part and the allowed characters.
 */
export function assertConfigName(type: string, key?: string): void {
  check('type', type);
  if (key !== undefined) check('key', key);
}

function check(part: 'type' | 'key', value: unknown): void {
  if (typeof value === 'string' && CONFIG_NAME_PATTERN.test(value)) return;
  const shown =
    typeof value === 'string' ? `'${value.length > 60 ? value.slice(0, 60) + '…' : value}'` : typeof value;
  throw new ToolbusError(
    'invalid-config',
    `config ${part} ${shown} is not valid: expected 1-128 characters of letters, digits, '_', '.', '=' ` +
      `or '-', starting with a letter or digit (e.g. 'tool-service' / 'joke-service')`,
  );
}

/**
 * Types the store holds that are run state, not config: saved agent runs (`run/<id>`) and approval
 * requests (`approval/<id>`), written by `RunStore`, and MCP servers' OAuth tokens (`mcp-oauth/<id>`),
 * rewritten at every refresh. The registry does not mirror them: they change often and would rebuild
 * the tool set for nothing (but see {@link STATE_CONFIG_DEPENDENCIES}).
 */
export const STATE_CONFIG_TYPES: ReadonlySet<string> = new Set(['run', 'approval', 'mcp-oauth']);

/**
 * State types that tools depend on, though not on their values: for each item the registry mirrors
 * only whether it holds the field named here, as `true` (an `mcp-oauth/<id>` item holds `tokens` once
 * toolbus is logged in to that MCP server). A tool that looked the item up is built again when that
 * changes (a login, a logout), not at every token refresh; and the registry never holds a token.
 */
export const STATE_CONFIG_DEPENDENCIES: ReadonlyMap<string, string> = new Map([['mcp-oauth', 'tokens']]);
