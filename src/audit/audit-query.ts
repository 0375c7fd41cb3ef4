/**
 * @module Reading audit queries and the durations the CLI and the gateway take (`30s`, `15m`, `1h`,
 * `7d`), checked once here so every store and entry point says the same about a bad value.
 */
import { ToolbusError } from '../errors/index.js';
import {
  DEFAULT_AUDIT_QUERY_LIMIT,
  MAX_AUDIT_QUERY_LIMIT,
  type AuditEntry,
  type AuditQuery,
} from './audit-log.js';

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)$/;

/**
 * A duration such as `500ms`, `30s`, `15m`, `1h`, `7d` or `2w`, in milliseconds; undefined when the
 * text is not one.
 */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text.trim());
  if (!match) return undefined;
  const ms = Number(match[1]) * UNIT_MS[match[2]!]!;
  return Number.isFinite(ms) ? Math.round(ms) : undefined;
}

/**
 * A `since` value: an age (`1h`: one hour before `now`) or a date and time (`2025-01-31T12:00:00Z`,
 * `2025-01-31`), as epoch ms.
 *
 * @throws ToolbusError `usage` saying what is accepted.
 */
export function parseSince(text: string, now: number = Date.now()): number {
  const age = parseDuration(text);
  if (age !== undefined) return now - age;
  // Only ISO-like dates: Date.parse also reads forms like '1' or 'May 5' that are surely typos here.
  if (/^\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$/.test(text.trim())) {
    const time = Date.parse(text.trim());
    if (!Number.isNaN(time)) return time;
  }
  throw new ToolbusError(
    'usage',
    `since must be an age such as 30s, 15m, 1h or 7d, or a time such as 2025-01-31T12:00:00Z, got '${clip(text)}'`,
  );
}

/**
 * A `limit` value given as text: a whole number from 1 to {@link MAX_AUDIT_QUERY_LIMIT}.
 * @throws ToolbusError `usage` otherwise.
 */
export function parseLimit(text: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isInteger(n)) {
    throw new ToolbusError(
      'usage',
      `limit must be a whole number from 1 to ${MAX_AUDIT_QUERY_LIMIT}, got '${clip(text)}'`,
    );
  }
  return checkLimit(n);
}

/** A query with its defaults applied and its values checked. */
export interface ResolvedAuditQuery {
  tool: string | undefined;
  user: string | undefined;
  since: number | undefined;
  limit: number;
}

/**
 * Checks a query and applies the defaults.
 * @throws ToolbusError `usage` naming the bad field.
 */
export function resolveAuditQuery(query: AuditQuery = {}): ResolvedAuditQuery {
  const { tool, user, since } = query;
  if (tool !== undefined && (typeof tool !== 'string' || tool === '')) {
    throw new ToolbusError('usage', 'audit query: tool must be a non-empty string');
  }
  if (user !== undefined && (typeof user !== 'string' || user === '')) {
    throw new ToolbusError('usage', 'audit query: user must be a non-empty string');
  }
  if (since !== undefined && (typeof since !== 'number' || !Number.isFinite(since))) {
    throw new ToolbusError('usage', `audit query: since must be a time in epoch ms, got ${String(since)}`);
  }
  return { tool, user, since, limit: checkLimit(query.limit ?? DEFAULT_AUDIT_QUERY_LIMIT) };
}

/** True when `entry` passes the query's filters (the limit aside). */
export function matchesAuditQuery(entry: AuditEntry, query: ResolvedAuditQuery): boolean {
  return (
    (query.tool === undefined || entry.tool === query.tool) &&
    (query.user === undefined || entry.user === query.user) &&
    (query.since === undefined || Date.parse(entry.time) >= query.since)
  );
}

/**
 * An entry read back from JSON (a stream message, a gateway answer), checked field by field; undefined
 * when `value` is not one, so a foreign or damaged message is skipped rather than shown half-read.
 */
export function toAuditEntry(value: unknown): AuditEntry | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  const text = (x: unknown): x is string => typeof x === 'string';
  const textOrNull = (x: unknown): x is string | null => x === null || typeof x === 'string';
  if (
    !text(v.time) ||
    Number.isNaN(Date.parse(v.time)) ||
    (v.kind !== 'call' && v.kind !== 'denied') ||
    !text(v.caller) ||
    !textOrNull(v.user) ||
    !textOrNull(v.tool) ||
    !textOrNull(v.callId) ||
    !text(v.outcome) ||
    typeof v.durationMs !== 'number' ||
    typeof v.argsBytes !== 'number' ||
    !textOrNull(v.argsSha256) ||
    (v.args !== undefined && !text(v.args))
  ) {
    return undefined;
  }
  const r = v.request as Record<string, unknown> | undefined;
  const request =
    typeof r === 'object' && r !== null && text(r.method) && text(r.path) && typeof r.status === 'number'
      ? { method: r.method, path: r.path, status: r.status }
      : undefined;
  return {
    time: v.time,
    kind: v.kind,
    caller: v.caller,
    user: v.user,
    tool: v.tool,
    callId: v.callId,
    outcome: v.outcome,
    durationMs: v.durationMs,
    argsBytes: v.argsBytes,
    argsSha256: v.argsSha256,
    ...(v.args !== undefined ? { args: v.args } : {}),
    ...(request ? { request } : {}),
  };
}

function checkLimit(limit: unknown): number {
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_AUDIT_QUERY_LIMIT) {
    throw new ToolbusError(
      'usage',
      `limit must be a whole number from 1 to ${MAX_AUDIT_QUERY_LIMIT}, got ${String(limit)}`,
    );
  }
  return limit;
}

function clip(text: string): string {
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}
