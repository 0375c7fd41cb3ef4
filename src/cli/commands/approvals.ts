/**
 * @module `toolbus approvals`: list the tool calls that wait for a person's approval in a running
 * `toolbus up`, and approve or deny them through its gateway (`/api/v1/approvals`).
 */
import { didYouMean } from '../../errors/index.js';
import { GATEWAY_FLAGS, GATEWAY_FLAGS_HELP, parseCommandArgs } from '../args.js';
import { ExitCode, UsageError, type CliCommand, type CliIO } from '../command.js';
import { GatewayRequestError, gatewayFetch, gatewayTarget } from '../gateway-client.js';

const ACTIONS = ['list', 'approve', 'deny'];
const STATUSES = ['pending', 'approved', 'denied', 'all'];

/** Arguments longer than this are cut in the table: the full text is in `--json`. */
const ARGUMENTS_WIDTH = 60;

const help = `Usage: toolbus approvals list [--all | --status STATUS] [--json]
       toolbus approvals approve ID [--reason TEXT] [--arguments JSON]
       toolbus approvals deny ID [--reason TEXT]
                        [--url URL] [--token TOKEN]

Decide the tool calls that wait for a person's approval. A tool that needs approval pauses the
agent's run before it is called; the run goes on once someone approves or denies the call (a
denied call tells the model who denied it and why). 'toolbus ask' prints the approval's ID when a
run pauses; 'toolbus ask --attach RUN_ID' follows the run after the decision.

  toolbus approvals list           the pending approvals, the newest first
  toolbus approvals approve ID     lets the call run, with the model's arguments or --arguments
  toolbus approvals deny ID        refuses the call

It talks to the running 'toolbus up' (GET and POST /api/v1/approvals, with the token). Deciding
needs a principal with the role approver or admin.

Options:
  --status STATUS    list: the approvals with this status: pending (default), approved, denied
                     or all
  --all              list: every approval (--status all)
  --reason TEXT      approve, deny: why; the model sees the reason of a denial
  --arguments JSON   approve: run the call with these arguments instead of the model's: a JSON
                     object, checked against the tool's schema by the gateway
  --json             print the approvals (list) or the decided approval as JSON
${GATEWAY_FLAGS_HELP}
  -h, --help         show this help

Exit codes: 0 success (also when nothing is pending), 1 error (not found, already decided, not
allowed, gateway unreachable), 2 usage.

Examples:
  toolbus approvals list
  toolbus approvals list --all --json
  toolbus approvals approve apr-0123456789abcdef01234567 --reason "checked with alice"
  toolbus approvals approve apr-0123456789abcdef01234567 --arguments '{"path":"/tmp/x.txt"}'
  toolbus approvals deny apr-0123456789abcdef01234567 --reason "not on production"
`;

const FLAGS = {
  status: { type: 'string' },
  all: { type: 'boolean' },
  reason: { type: 'string' },
  arguments: { type: 'string' },
  json: { type: 'boolean' },
  ...GATEWAY_FLAGS,
} as const;

/** The flags only some actions take. */
const ACTION_FLAGS = ['status', 'all', 'reason', 'arguments'] as const;
const OWN_FLAGS: Record<string, readonly string[]> = {
  list: ['status', 'all'],
  approve: ['reason', 'arguments'],
  deny: ['reason'],
};

type Flags = ReturnType<typeof parseCommandArgs<typeof FLAGS>>['values'];

/** An approval as the gateway serves it; only what this command shows is relied on. */
interface Approval {
  id: string;
  runId?: string;
  callId?: string;
  tool?: string;
  arguments?: unknown;
  user?: string;
  principal?: string;
  time?: string;
  expiresAt?: string;
  status?: string;
  decision?: { by?: string; reason?: string; arguments?: unknown; time?: string; timedOut?: boolean };
}

/** The `approvals` command. */
export const command: CliCommand = {
  name: 'approvals',
  summary: 'list, approve and deny tool calls that wait for approval',
  help,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(argv, FLAGS);
    const [action, ...rest] = positionals;
    if (!action) throw new UsageError('missing action: expected list, approve or deny');
    if (!ACTIONS.includes(action)) {
      throw new UsageError(
        `unknown action '${action}'${didYouMean(action, ACTIONS)}: expected list, approve or deny`,
      );
    }
    // A flag of another action would be ignored silently: say so instead.
    const misplaced = ACTION_FLAGS.find((f) => values[f] !== undefined && !OWN_FLAGS[action]!.includes(f));
    if (misplaced) throw new UsageError(`--${misplaced} is not an option of 'toolbus approvals ${action}'`);
    let status: string | undefined;
    let id: string | undefined;
    let decision: DecisionBody | undefined;
    if (action === 'list') {
      if (rest.length > 0) {
        throw new UsageError(`unexpected argument '${rest[0]}'; 'toolbus approvals list' takes only options`);
      }
      status = listStatus(values);
    } else {
      id = rest[0];
      if (!id || id.trim() === '') {
        throw new UsageError(
          `missing the approval's ID, e.g. toolbus approvals ${action} apr-0123456789abcdef01234567 ` +
            '(see toolbus approvals list)',
        );
      }
      if (rest.length > 1) throw new UsageError(`unexpected argument '${rest[1]}' after the ID '${id}'`);
      decision = decisionBody(action === 'approve' ? 'approve' : 'deny', values);
    }
    // After the arguments: a mistake in them is reported first, with nothing sent.
    const target = gatewayTarget(values, io);
    try {
      if (status !== undefined) {
        const response = await gatewayFetch(target, `/api/v1/approvals?status=${status}`, {
          signal: io.signal,
        });
        const body = (await response.json()) as { approvals?: unknown };
        const approvals = (Array.isArray(body.approvals) ? body.approvals : []).filter(isApproval);
        if (values.json) io.stdout.write(JSON.stringify(approvals, null, 2) + '\n');
        else if (approvals.length === 0)
          io.stderr.write(status === 'all' ? 'no approvals\n' : `no ${status} approvals\n`);
        else io.stdout.write(formatApprovals(approvals, Date.now()));
        return ExitCode.Ok;
      }
      const response = await gatewayFetch(target, `/api/v1/approvals/${encodeURIComponent(id!)}`, {
        method: 'POST',
        body: decision,
        signal: io.signal,
      });
      const body = (await response.json()) as { approval?: unknown };
      const approval = isApproval(body.approval) ? body.approval : undefined;
      if (values.json) {
        io.stdout.write(JSON.stringify(body.approval ?? null, null, 2) + '\n');
        return ExitCode.Ok;
      }
      const verb = decision!.decision === 'approve' ? 'approved' : 'denied';
      const tool = approval?.tool !== undefined ? ` (${printable(approval.tool)})` : '';
      const by = approval?.decision?.by !== undefined ? ` as ${printable(approval.decision.by)}` : '';
      io.stdout.write(`${verb} ${printable(approval?.id ?? id!)}${tool}${by}\n`);
      return ExitCode.Ok;
    } catch (error) {
      if (error instanceof GatewayRequestError) {
        io.stderr.write(`toolbus approvals: ${error.message}\n`);
        return ExitCode.Error;
      }
      throw error;
    }
  },
};

/** The `?status=` of `list`: pending unless `--status` or `--all` says otherwise. */
function listStatus(values: Flags): string {
  if (values.all && values.status !== undefined) {
    throw new UsageError('--all is --status all: give one of them');
  }
  if (values.all) return 'all';
  const status = values.status ?? 'pending';
  if (!STATUSES.includes(status)) {
    throw new UsageError(
      `unknown status '${status}'${didYouMean(status, STATUSES)}: --status takes ${STATUSES.join(', ')}`,
    );
  }
  return status;
}

/** The body of `POST /api/v1/approvals/ID`. */
interface DecisionBody {
  decision: 'approve' | 'deny';
  reason?: string;
  arguments?: Record<string, unknown>;
}

function decisionBody(decision: 'approve' | 'deny', values: Flags): DecisionBody {
  const body: DecisionBody = { decision };
  if (values.reason !== undefined) {
    if (values.reason.trim() === '')
      throw new UsageError('--reason needs a text, e.g. --reason "checked it"');
    body.reason = values.reason;
  }
  if (values.arguments !== undefined) {
    // Checked here so a quoting slip in the shell is a usage error, not a gateway round trip.
    let parsed: unknown;
    try {
      parsed = JSON.parse(values.arguments);
    } catch {
      parsed = undefined;
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new UsageError(
        `--arguments must be a JSON object, got '${values.arguments}'; ` +
          `e.g. --arguments '{"path":"/tmp/x.txt"}'`,
      );
    }
    body.arguments = parsed as Record<string, unknown>;
  }
  return body;
}

function isApproval(value: unknown): value is Approval {
  return (
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    typeof (value as { id?: unknown }).id === 'string'
  );
}

/** One aligned line per approval under a header; the arguments (last) are compact JSON, cut at 60. */
function formatApprovals(approvals: readonly Approval[], now: number): string {
  const header = ['ID', 'TOOL', 'RUN', 'PRINCIPAL', 'USER', 'AGE', 'STATUS', 'ARGUMENTS'];
  const rows = approvals.map((a) => [
    a.id,
    a.tool ?? '-',
    a.runId ?? '-',
    a.principal ?? '-',
    a.user ?? '-',
    age(a.time, now),
    statusText(a),
    clip(JSON.stringify(a.arguments ?? {}), ARGUMENTS_WIDTH),
  ]);
  const table = [header, ...rows].map((row) => row.map(printable));
  const widths = header.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  return table
    .map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  '))
    .map((line) => `${line}\n`)
    .join('');
}

function statusText(a: Approval): string {
  const status = a.status ?? '-';
  if (!a.decision) return status;
  if (a.decision.timedOut) return `${status} (timed out)`;
  return a.decision.by !== undefined ? `${status} by ${a.decision.by}` : status;
}

/** How long ago `time` was, in its largest unit (42s, 5m, 3h, 2d); the time itself if unreadable. */
function age(time: string | undefined, now: number): string {
  if (time === undefined) return '-';
  const at = Date.parse(time);
  if (Number.isNaN(at)) return time;
  const seconds = Math.max(0, Math.floor((now - at) / 1000));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function printable(text: string): string {
  // Tool, user and principal names come from clients: they must not move the cursor or recolour the terminal.
  return text.replace(/\p{Cc}/gu, '?');
}

/** Prints the approval a run waits for, with how to decide it (used by `toolbus ask`). */
export function writeApprovalNeeded(io: CliIO, approval: unknown, runId: string | undefined): void {
  const a: Partial<Approval> = isApproval(approval) ? approval : {};
  const id = printable(a.id ?? '?');
  const run = printable(a.runId ?? runId ?? '?');
  const call = printable(`${a.tool ?? '?'}(${JSON.stringify(a.arguments ?? {})})`);
  io.stderr.write(
    `approval needed: ${call} (id ${id}, run ${run})\n` +
      `  decide with: toolbus approvals approve ${id}   or: toolbus approvals deny ${id} --reason "..."\n`,
  );
}
