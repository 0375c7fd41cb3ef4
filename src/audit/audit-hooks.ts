/**
 * @module Turning what a `ToolSet` and the gateway observe into audit entries: `auditToolSetHooks`
 * (every finished call, through `onResult`) and `auditDeniedHook` (every 401/403 of the gateway).
 */
import { createHash } from 'node:crypto';
import type { ToolResult, ToolResultEvent } from '../tools/index.js';
import type { AuditEntry, AuditLog } from './audit-log.js';

/** Options of {@link auditToolSetHooks} and {@link auditDeniedHook}. */
export interface AuditHookOptions {
  /**
   * Also store the argument text of each call, not only its size and SHA-256. Arguments may hold
   * personal data or secrets: leave it off unless the operator asked for it. @default false
   */
  recordArguments?: boolean;
  /** The clock. @default Date.now */
  now?: () => number;
}

/** A refused request as the gateway reports it (the fields of its `GatewayDeniedEvent`). */
export interface AuditDeniedRequest {
  status: number;
  code: string;
  method: string;
  path: string;
  remote: string;
  /** Where it was refused: `http`, `mcp` or `agent`. @default 'http' */
  surface?: string | undefined;
  /** The principal, when it was authenticated. */
  principal?: string | undefined;
  /** The user the call was for. */
  user?: string | undefined;
  /** The tool asked for. */
  tool?: string | undefined;
}

/** The hooks {@link auditToolSetHooks} makes; fits `ToolSetHooks`, alone or beside other hooks. */
export interface AuditToolSetHooks {
  onResult: (event: ToolResultEvent) => void;
}

/** What an entry says when the call named no caller. */
export const UNKNOWN_CALLER = 'unknown';

/**
 * Hooks for a `ToolSet` (or a registry's `toolSetOptions`) that record every finished call in `log`:
 * caller, user, tool, call id, outcome, duration, and the size and SHA-256 of the argument text (the
 * text itself only with `recordArguments`). Recording never waits on the store.
 *
 * @example
 * ```ts
 * const audit = auditToolSetHooks(log);
 * const tools = new ToolSet([echo], { hooks: { onResult: [metrics.toolSetHooks().onResult, audit.onResult] } });
 * ```
 */
export function auditToolSetHooks(
  log: Pick<AuditLog, 'record'>,
  options: AuditHookOptions = {},
): AuditToolSetHooks {
  const now = options.now ?? Date.now;
  const withArgs = options.recordArguments === true;
  return {
    onResult(event: ToolResultEvent): void {
      const text = argumentText(event.args);
      const entry: AuditEntry = {
        time: new Date(now()).toISOString(),
        kind: 'call',
        caller: event.caller ?? UNKNOWN_CALLER,
        user: event.user ?? null,
        tool: event.name,
        callId: event.callId,
        outcome: outcomeOf(event.result),
        durationMs: Math.max(0, Math.round(event.durationMs * 1000) / 1000),
        argsBytes: Buffer.byteLength(text),
        argsSha256: sha256Hex(text),
        ...(withArgs ? { args: text } : {}),
      };
      log.record(entry);
    },
  };
}

/**
 * A gateway `onDenied` hook that records each refused request or call: the answered code as the
 * outcome, the method, path and status, the tool and user when known; the caller is
 * `<surface>:<principal>@<remote address>` (`http:unauthenticated@…` before authentication).
 */
export function auditDeniedHook(
  log: Pick<AuditLog, 'record'>,
  options: Pick<AuditHookOptions, 'now'> = {},
): (event: AuditDeniedRequest) => void {
  const now = options.now ?? Date.now;
  return (event) => {
    log.record({
      time: new Date(now()).toISOString(),
      kind: 'denied',
      caller: `${event.surface ?? 'http'}:${event.principal ?? 'unauthenticated'}@${event.remote}`,
      user: event.user ?? null,
      tool: event.tool ?? null,
      callId: null,
      outcome: event.code,
      durationMs: 0,
      argsBytes: 0,
      argsSha256: null,
      request: { method: event.method, path: event.path.slice(0, 200), status: event.status },
    });
  };
}

/** The SHA-256 of a text's UTF-8 bytes, lowercase hex. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The arguments as text: the caller's own text, or the JSON of an object given as such. */
function argumentText(args: string | Readonly<Record<string, unknown>>): string {
  if (typeof args === 'string') return args;
  try {
    return JSON.stringify(args) ?? '';
  } catch {
    // A cycle or a BigInt: the call itself reported it; the entry still says a call was made.
    return '';
  }
}

/** `ok`, or the error code; a code from another process counts only when it looks like one. */
function outcomeOf(result: ToolResult): string {
  if (!result.isError) return 'ok';
  const code: unknown = result.error?.code;
  return typeof code === 'string' && /^[a-z][a-z-]{0,39}$/.test(code) ? code : 'tool-error';
}
