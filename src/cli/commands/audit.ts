/**
 * @module `toolbus audit`: read the audit log (tool calls and denied requests) of a running `toolbus up`
 * through its gateway, or directly from its JetStream stream or SQLite file.
 */
import { resolve } from 'node:path';
import {
  DEFAULT_AUDIT_QUERY_LIMIT,
  parseLimit,
  parseSince,
  toAuditEntry,
  type AuditEntry,
  type AuditLog,
  type AuditQuery,
} from '../../audit/index.js';
import { isToolbusError } from '../../errors/index.js';
import { GATEWAY_FLAGS, GATEWAY_FLAGS_HELP, parseCommandArgs } from '../args.js';
import { ExitCode, UsageError, type CliCommand, type CliIO } from '../command.js';
import { gatewayFetch, gatewayTarget } from '../gateway-client.js';
import { auditFilePath } from '../audit-setup.js';
import { importLeaf } from '../import-leaf.js';
import { NATS_SECURITY_FLAGS, NATS_SECURITY_HELP, NatsSecurity, connectSecurely } from '../nats-security.js';

const help = `Usage: toolbus audit [--tool NAME] [--user USER] [--since WHEN] [--limit N] [--json]
                     [--url URL] [--token TOKEN] [--nats URL | --local | --file PATH]

Show the audit log: one line per tool call or denied request (401/403), the latest last. An entry
has the time, the outcome ('ok' or the error code), the duration, the tool, the end user, the
caller (entry point and principal: cli:admin@127.0.0.1, http:ci-bot@…, mcp:…, agent), the call id, and
the size and SHA-256 of the argument text (the text itself only if toolbus up ran with
--audit-args).

By default it asks the running 'toolbus up' (GET /api/v1/audit, with the token). --nats reads the
JetStream stream TOOLBUS_AUDIT directly; --local and --file read a SQLite audit file directly, so
they work without a running toolbus up.

Options:
  --tool NAME        only calls of this tool
  --user USER        only calls for this end user
  --since WHEN       only entries since then: an age (30s, 15m, 1h, 7d) or a time
                     (2025-01-31T12:00:00Z)
  --limit N          the latest N entries (default: ${DEFAULT_AUDIT_QUERY_LIMIT}; at most 10000)
  --json             one JSON object per line: time, kind, caller, user, tool, callId,
                     outcome, durationMs, argsBytes, argsSha256, and args or request when set
${GATEWAY_FLAGS_HELP}
  --nats URL         read the stream TOOLBUS_AUDIT on this NATS server (toolbus up --nats)
  --local            read $TOOLBUS_HOME/audit.db (default ./.toolbus/audit.db)
  --file PATH        read this SQLite audit file
  -h, --help         show this help

${NATS_SECURITY_HELP}

Exit codes: 0 success (also when nothing matches), 1 error, 2 usage.

Examples:
  toolbus audit --since 1h
  toolbus audit --tool tell-joke --user alice --limit 20
  toolbus audit --json --since 1d
  toolbus audit --nats nats://127.0.0.1:4222 --tool tell-joke
`;

const FLAGS = {
  tool: { type: 'string' },
  user: { type: 'string' },
  since: { type: 'string' },
  limit: { type: 'string' },
  json: { type: 'boolean' },
  ...GATEWAY_FLAGS,
  nats: { type: 'string' },
  ...NATS_SECURITY_FLAGS,
  local: { type: 'boolean' },
  file: { type: 'string' },
} as const;

/** The `audit` command. */
export const command: CliCommand = {
  name: 'audit',
  summary: 'show the audit log: tool calls and denied requests',
  help,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(argv, FLAGS);
    if (positionals.length > 0) {
      throw new UsageError(`unexpected argument '${positionals[0]}'; 'toolbus audit' takes only options`);
    }
    const sources = (['nats', 'local', 'file'] as const).filter((flag) => values[flag] !== undefined);
    if (sources.length > 1) {
      throw new UsageError(`--${sources[0]} and --${sources[1]} name two audit logs: give one of them`);
    }
    const direct = sources[0];
    const remote = (['url', 'token'] as const).find((flag) => values[flag] !== undefined);
    if (direct && remote) {
      throw new UsageError(
        `--${remote} is for reading through 'toolbus up'; --${direct} reads the log directly`,
      );
    }
    for (const name of ['tool', 'user', 'nats', 'file'] as const) {
      if (values[name] === '') throw new UsageError(`--${name} needs a value`);
    }
    // Checked here, before anything is opened, so a typo is a usage error (exit 2).
    const query: AuditQuery = {
      ...(values.tool !== undefined ? { tool: values.tool } : {}),
      ...(values.user !== undefined ? { user: values.user } : {}),
      ...(values.since !== undefined ? { since: usage(() => parseSince(values.since!)) } : {}),
      limit: values.limit === undefined ? DEFAULT_AUDIT_QUERY_LIMIT : usage(() => parseLimit(values.limit!)),
    };
    let entries: AuditEntry[];
    if (direct === undefined) {
      entries = await queryGateway(io, values, query);
    } else {
      const log = await openReader(io, values, NatsSecurity.fromFlags(values, io));
      try {
        entries = await log.query(query);
      } finally {
        await log.close();
      }
    }
    if (values.json) {
      io.stdout.write(entries.map((e) => JSON.stringify(e) + '\n').join(''));
    } else if (entries.length === 0) {
      io.stderr.write('no audit entries match\n');
    } else {
      io.stdout.write(formatEntries(entries));
    }
    return ExitCode.Ok;
  },
};

/** Runs a parser of a flag's value; its `usage` error becomes the CLI's UsageError (exit 2). */
function usage<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (isToolbusError(error) && error.code === 'usage') throw new UsageError(`--${error.message}`);
    throw error;
  }
}

async function queryGateway(
  io: CliIO,
  values: { url?: string | undefined; token?: string | undefined; since?: string | undefined },
  query: AuditQuery,
): Promise<AuditEntry[]> {
  const target = gatewayTarget(values, io);
  const params = new URLSearchParams();
  if (query.tool !== undefined) params.set('tool', query.tool);
  if (query.user !== undefined) params.set('user', query.user);
  // The text as given: an age then counts back from the gateway's clock, not this machine's.
  if (values.since !== undefined) params.set('since', values.since);
  params.set('limit', String(query.limit));
  const response = await gatewayFetch(target, `/api/v1/audit?${params.toString()}`, { signal: io.signal });
  const body = (await response.json()) as { entries?: unknown };
  const list = Array.isArray(body.entries) ? body.entries : [];
  return list.map(toAuditEntry).filter((e): e is AuditEntry => e !== undefined);
}

async function openReader(
  io: CliIO,
  values: { nats?: string | undefined; local?: boolean | undefined; file?: string | undefined },
  natsSecurity: NatsSecurity,
): Promise<Pick<AuditLog, 'query' | 'close'>> {
  const nats = values.nats;
  if (nats !== undefined) {
    const { JetStreamAuditLog } = await importLeaf('nats', () => import('../../audit/nats/index.js'));
    return connectSecurely(natsSecurity, nats, io, (security) =>
      JetStreamAuditLog.connect({ servers: nats, signal: io.signal, readOnly: true, ...security }),
    );
  }
  const { SqliteAuditLog } = await importLeaf('sqlite', () => import('../../audit/sqlite/index.js'));
  const path = values.file !== undefined ? resolve(io.cwd, values.file) : auditFilePath(io);
  return new SqliteAuditLog({ path, readOnly: true });
}

/** One aligned line per entry under a header; control characters in names are shown as `?`. */
export function formatEntries(entries: readonly AuditEntry[]): string {
  const rows = entries.map((e) => [
    e.time,
    e.outcome,
    e.kind === 'denied' ? '-' : formatDuration(e.durationMs),
    e.tool ?? '-',
    e.user ?? '-',
    e.caller,
    e.callId ?? '-',
    e.request
      ? `${e.request.method} ${e.request.path} (${e.request.status})`
      : `${e.argsBytes} B sha256:${(e.argsSha256 ?? '').slice(0, 12)}` +
        (e.args !== undefined ? ` ${JSON.stringify(clip(e.args, 80))}` : ''),
  ]);
  const header = ['TIME', 'OUTCOME', 'DURATION', 'TOOL', 'USER', 'CALLER', 'CALL ID', 'ARGS'];
  const table = [header, ...rows].map((row) => row.map(printable));
  const widths = header.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  return (
    table
      .map((row) =>
        row
          .map((cell, i) =>
            i === row.length - 1 ? cell : i === 2 ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!),
          )
          .join('  '),
      )
      .join('\n') + '\n'
  );
}

function formatDuration(ms: number): string {
  return ms < 1000 ? `${ms.toFixed(1)}ms` : `${(ms / 1000).toFixed(2)}s`;
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function printable(text: string): string {
  // A tool or user name comes from a client: it must not move the cursor or recolour the terminal.
  return text.replace(/\p{Cc}/gu, '?');
}
