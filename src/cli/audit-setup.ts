/**
 * @module The audit log of `toolbus up`: its flags (`--no-audit`, `--audit-args`, `--audit-max-age`,
 * `--audit-max-mb`), and opening it where the process keeps its state: a SQLite file of its own in the
 * home (`$TOOLBUS_HOME/audit.db`), or the `TOOLBUS_AUDIT` JetStream stream with `--nats`. The leaves are
 * loaded only here, and only when the log is on.
 */
import { join } from 'node:path';
import {
  DEFAULT_AUDIT_MAX_AGE_MS,
  DEFAULT_AUDIT_MAX_BYTES,
  auditDeniedHook,
  auditToolSetHooks,
  parseDuration,
  type AuditBufferOptions,
  type AuditDeniedRequest,
  type AuditLog,
} from '../audit/index.js';
import { hookList, type ToolSetHooks } from '../tools/index.js';
import type { ReadinessCheck } from '../gateway/index.js';
import { UsageError, type CliIO } from './command.js';
import { busNatsUrl, toolbusHome, type ConnectFlags } from './connect.js';
import { importLeaf } from './import-leaf.js';
import { connectSecurely } from './nats-security.js';

/** The flags `toolbus up` takes for its audit log. */
export const AUDIT_FLAGS = {
  'no-audit': { type: 'boolean' },
  'audit-args': { type: 'boolean' },
  'audit-max-age': { type: 'string' },
  'audit-max-mb': { type: 'string' },
} as const;

/** Help text lines for {@link AUDIT_FLAGS}. */
export const AUDIT_FLAGS_HELP = `  --audit-args       also keep each call's argument text in the audit log (default: only its
                     size and SHA-256; arguments may hold personal data or secrets)
  --audit-max-age AGE
                     drop audit entries older than AGE, e.g. 12h, 7d, 4w (default: 7d)
  --audit-max-mb MB  keep the audit log under MB megabytes, oldest entries dropped first
                     (default: 100)
  --no-audit         keep no audit log. By default every tool call and every denied request is
                     recorded in $TOOLBUS_HOME/audit.db, or in the JetStream stream TOOLBUS_AUDIT
                     with --nats; read it with 'toolbus audit'`;

/** What the audit flags ask for. */
export interface AuditSettings {
  /** False with `--no-audit`. */
  enabled: boolean;
  recordArguments: boolean;
  maxAgeMs: number;
  maxBytes: number;
}

/** The audit flags' values, checked. @throws UsageError naming the flag. */
export function parseAuditFlags(values: {
  'no-audit'?: boolean | undefined;
  'audit-args'?: boolean | undefined;
  'audit-max-age'?: string | undefined;
  'audit-max-mb'?: string | undefined;
}): AuditSettings {
  const enabled = values['no-audit'] !== true;
  const tuned = ['audit-args', 'audit-max-age', 'audit-max-mb'].find(
    (flag) => values[flag as keyof typeof values] !== undefined,
  );
  if (!enabled && tuned) throw new UsageError(`--${tuned} tunes the audit log, which --no-audit turns off`);
  let maxAgeMs = DEFAULT_AUDIT_MAX_AGE_MS;
  const age = values['audit-max-age'];
  if (age !== undefined) {
    const parsed = parseDuration(age);
    if (parsed === undefined || parsed < 1_000) {
      throw new UsageError(`--audit-max-age takes an age of at least 1s such as 12h, 7d or 4w, got '${age}'`);
    }
    maxAgeMs = parsed;
  }
  let maxBytes = DEFAULT_AUDIT_MAX_BYTES;
  const mb = values['audit-max-mb'];
  if (mb !== undefined) {
    const n = Number(mb);
    if (mb.trim() === '' || !Number.isFinite(n) || n < 0.0625) {
      throw new UsageError(`--audit-max-mb takes a number of megabytes of at least 0.0625, got '${mb}'`);
    }
    maxBytes = Math.round(n * 1024 * 1024);
  }
  return { enabled, recordArguments: values['audit-args'] === true, maxAgeMs, maxBytes };
}

/** An open audit log and one line saying where it is, for the banner. */
export interface OpenedAuditLog {
  log: AuditLog;
  description: string;
}

/**
 * Opens the audit log of a `toolbus up`: the JetStream stream when the bus is on NATS, else
 * `<home>/audit.db`. Rejects as the stores do (`store-error`, `unavailable`, `unsupported` when the
 * leaf's package is missing).
 */
export async function openAuditLog(
  flags: ConnectFlags,
  settings: AuditSettings,
  io: CliIO,
  reporting: Pick<AuditBufferOptions, 'onError' | 'onRecover'>,
): Promise<OpenedAuditLog> {
  const limits = `entries kept ${formatAge(settings.maxAgeMs)}, at most ${formatMb(settings.maxBytes)}`;
  const args = settings.recordArguments ? 'arguments kept' : 'arguments hashed';
  const nats = busNatsUrl(flags, io);
  if (nats) {
    const { JetStreamAuditLog } = await importLeaf('nats', () => import('../audit/nats/index.js'));
    const log = await connectSecurely(flags.natsSecurity, nats, io, (security) =>
      JetStreamAuditLog.connect({
        servers: nats,
        signal: io.signal,
        ...security,
        maxAgeMs: settings.maxAgeMs,
        maxBytes: settings.maxBytes,
        ...reporting,
      }),
    );
    return { log, description: `JetStream stream ${log.stream} (${limits}; ${args})` };
  }
  const { SqliteAuditLog } = await importLeaf('sqlite', () => import('../audit/sqlite/index.js'));
  const log = new SqliteAuditLog({
    path: auditFilePath(io),
    maxAgeMs: settings.maxAgeMs,
    maxBytes: settings.maxBytes,
    ...reporting,
  });
  return { log, description: `sqlite ${log.path} (${limits}; ${args})` };
}

/** The SQLite audit file of a home: `$TOOLBUS_HOME/audit.db`, else `./.toolbus/audit.db`. */
export function auditFilePath(io: Pick<CliIO, 'env' | 'cwd'>): string {
  return join(toolbusHome(io), 'audit.db');
}

function formatAge(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
  ] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${Math.round(ms / 1000)}s`;
}

function formatMb(bytes: number): string {
  return `${Number((bytes / (1024 * 1024)).toFixed(2))} MB`;
}

/** Where audit failures are told: the process's log when it has one (pino's `warn`), else stderr. */
export interface AuditReporter {
  warn(fields: object, message: string): void;
}

/** The audit log of a running system, with what the registry and the gateway need of it. */
export interface SystemAudit extends OpenedAuditLog {
  /** `base` with the audit log's `onResult` added after its own. */
  toolSetHooks(base: ToolSetHooks): ToolSetHooks;
  /** The gateway's `onDenied` hook that records refused requests. */
  onDenied: (event: AuditDeniedRequest) => void;
  /** The `audit` part of `/api/v1/ready` (not required: calls are served either way). */
  readiness: Record<string, ReadinessCheck>;
}

/**
 * Opens the audit log `settings` ask for (undefined with `--no-audit`), its write failures reported
 * once each time writing starts failing, and again when it recovers.
 */
export async function startAudit(
  flags: ConnectFlags,
  settings: AuditSettings | undefined,
  io: CliIO,
  reporter: AuditReporter | undefined,
): Promise<SystemAudit | undefined> {
  if (!settings?.enabled) return undefined;
  const warn = (event: string, message: string, fields: object): void => {
    if (reporter) reporter.warn({ event, ...fields }, message);
    else io.stderr.write(`toolbus: ${message}\n`);
  };
  const opened = await openAuditLog(flags, settings, io, {
    onError: (e) => {
      if (e.consecutive !== 1) return;
      warn(
        'audit.write-failed',
        `audit log: writing failed (${e.error.message}); ${e.entries} entries wait and are retried, calls go on`,
        { entries: e.entries },
      );
    },
    onRecover: (e) =>
      warn(
        'audit.write-recovered',
        `audit log: writing again after ${e.failures} failed ${e.failures === 1 ? 'write' : 'writes'}` +
          (e.dropped > 0 ? `; ${e.dropped} entries were dropped meanwhile` : ''),
        { failures: e.failures, dropped: e.dropped },
      ),
  });
  const { log } = opened;
  const calls = auditToolSetHooks(log, { recordArguments: settings.recordArguments });
  return {
    ...opened,
    toolSetHooks: (base) => ({ ...base, onResult: [...hookList(base.onResult), calls.onResult] }),
    onDenied: auditDeniedHook(log),
    readiness: {
      audit: () => {
        const stats = log.stats();
        return stats.lastError === undefined
          ? { ok: true, required: false, detail: `${stats.written} entries written since the start` }
          : {
              ok: false,
              required: false,
              detail: `writing fails (${stats.lastError}); ${stats.pending} entries wait, ${stats.dropped} dropped`,
            };
      },
    },
  };
}
