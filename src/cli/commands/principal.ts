/**
 * @module `toolbus principal`: add, list and remove named API keys (principals) in the config store.
 * A key is stored as `principal/NAME` with only the SHA-256 of its token; the token is printed once.
 */
import { existsSync } from 'node:fs';
import { CONFIG_NAME_PATTERN, type ConfigStore } from '../../config/index.js';
import { didYouMean, isToolbusError } from '../../errors/index.js';
import {
  DEFAULT_MAX_IN_FLIGHT,
  PRINCIPAL_CONFIG_TYPE,
  Role,
  checkPrincipalName,
  decodePrincipalItem,
  hashToken,
  isRole,
  newPrincipalToken,
  parseRate,
  splitList,
  type PrincipalItem,
} from '../../policy/index.js';
import type { JsonValue } from '../../schema/index.js';
import { CONNECTION_FLAGS, CONNECTION_FLAGS_HELP, parseCommandArgs } from '../args.js';
import { ExitCode, UsageError, type CliCommand, type CliIO } from '../command.js';
import {
  answerMissingStoreFile,
  configStorePath,
  describeStore,
  openConfigStore,
  type MissingStoreWords,
} from '../connect.js';
import { NATS_SECURITY_FLAGS, NATS_SECURITY_HELP, NatsSecurity } from '../nats-security.js';

const ROLES = Object.values(Role);
const ACTIONS = ['add', 'list', 'remove'];

const HELP = `Usage: toolbus principal <add|list|remove> [options]

Manage named API keys (principals): who may use the gateway of 'toolbus up', with which roles, on
which tools and how often. A principal is the config item principal/NAME; it holds the SHA-256 of
its token, never the token. A running gateway picks up changes without a restart.

  toolbus principal add NAME --role ROLE[,ROLE] [options]   prints the new token once
  toolbus principal list                                    lists principals (never their tokens)
  toolbus principal remove NAME                             deletes it: its token stops working

Options of add:
  --role ROLE[,ROLE] its roles (required; repeat the flag or separate them with commas):
                       admin        everything: config, the audit log, metrics, every tool
                       caller       lists and calls tools, asks the agent, uses /mcp
                       approver     sees the tools and decides approvals (calls none unless
                                    it is also a caller)
                       impersonate  may name the user its calls are for: the X-Toolbus-User
                                    header, ?user= or a body's "user"
  --user USER        whom its calls are for when it names no user (default: NAME)
  --tools GLOBS      the tools it may see and call, comma-separated globs such as 'tell-*,get-*'
  --profile ID       bind it to the tool profile profile/ID: it sees and calls only those tools
                     (default: every tool its roles allow)
  --rate RATE        its own call rate: N/s, N/m, N/h or N/d, e.g. 20/s (default: the strictest
                     rate of its roles, else none)
  --burst N          the most calls at once after a quiet spell (default: N of --rate)
  --max-in-flight N  the most of its calls running at once (default: the smallest maxInFlight
                     of its roles, else ${DEFAULT_MAX_IN_FLIGHT})
  --force            replace a principal of that name: its old token stops working
Options of all actions:
  --json             machine-readable output (add: the token and the item, without its hash)
${CONNECTION_FLAGS_HELP}

${NATS_SECURITY_HELP}

add prints the token on stdout, on a line of its own, and only then: store it now, toolbus keeps
only its hash. A lost token cannot be shown again; add the principal again with --force.

The token of 'toolbus up' ($TOOLBUS_TOKEN, else the file $TOOLBUS_HOME/token) is the principal
admin; 'admin' cannot be a principal's name. Use a token as a bearer token:
  curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8888/api/v1/tools
or with the CLI: toolbus tools --token "$TOKEN" (or TOOLBUS_TOKEN=$TOKEN).

Settings per role and quotas per tool are config items too (toolbus config put):
  role/NAME    {"tools": ["tell-*"], "rate": "20/s", "maxInFlight": 8}
               for every principal with role NAME; a role without tools allows every tool
  quota/TOOL   {"rate": "5/s", "burst": 10, "per": "principal"}
               calls of tool TOOL: "per": "principal" (the default) gives each principal its
               own bucket, "per": "all" one bucket shared by every caller

In list, '-' means not set: what its roles allow (every tool, no rate, ${DEFAULT_MAX_IN_FLIGHT} calls in flight
unless a role/NAME item says otherwise).

Exit codes: 0 success, 1 error (the principal exists, not found, store problem), 2 usage (a bad
role, name, rate or number).

Examples:
  toolbus principal add ci-bot --role caller --tools 'tell-*,get-*' --rate 20/s
  TOKEN=$(toolbus principal add support --role caller,impersonate --max-in-flight 4)
  toolbus principal add ops --role admin --force
  toolbus principal list --json
  toolbus principal remove ci-bot
`;

/** What a read of a home without a config file says. */
const PRINCIPAL_WORDS: MissingStoreWords = {
  command: 'toolbus principal',
  items: 'principals',
  add: 'toolbus principal add NAME --role caller',
  creates: 'toolbus principal add',
};

const FLAGS = {
  ...CONNECTION_FLAGS,
  ...NATS_SECURITY_FLAGS,
  role: { type: 'string', multiple: true },
  user: { type: 'string' },
  tools: { type: 'string', multiple: true },
  profile: { type: 'string' },
  rate: { type: 'string' },
  burst: { type: 'string' },
  'max-in-flight': { type: 'string' },
  force: { type: 'boolean' },
  json: { type: 'boolean' },
} as const;

type Flags = ReturnType<typeof parseCommandArgs<typeof FLAGS>>['values'];

/** The flags only `add` uses: given to another action they would be ignored silently. */
const ADD_FLAGS = ['role', 'user', 'tools', 'profile', 'rate', 'burst', 'max-in-flight', 'force'] as const;

/** `toolbus principal`. */
export const command: CliCommand = {
  name: 'principal',
  summary: 'add, list and remove API keys (principals) with roles, tool globs and rates',
  help: HELP,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(argv, FLAGS);
    const [action, ...rest] = positionals;
    if (!action) throw new UsageError('missing action: expected add, list or remove');
    if (!ACTIONS.includes(action)) {
      throw new UsageError(
        `unknown action '${action}'${didYouMean(action, ACTIONS)}: expected add, list or remove`,
      );
    }
    if (action !== 'add') {
      for (const flag of ADD_FLAGS) {
        if (values[flag] !== undefined) throw new UsageError(`--${flag} applies to add, not to ${action}`);
      }
    }
    let name: string | undefined;
    let item: PrincipalItem | undefined;
    if (action === 'list') {
      if (rest.length > 0) throw new UsageError(`list takes no arguments, got '${rest.join(' ')}'`);
    } else {
      if (rest.length === 0) throw new UsageError(`missing name: ${action} NAME (e.g. ${action} ci-bot)`);
      if (rest.length > 1) throw new UsageError(`${action} takes one NAME, got ${rest.length} arguments`);
      name = rest[0]!;
      if (action === 'add') item = itemOf(name, values);
    }

    const flags = {
      nats: values.nats,
      store: values.store,
      natsSecurity: NatsSecurity.fromFlags(values, io),
    };
    // Reading must not create a file: a mistyped --store would otherwise be created and look empty.
    if (action !== 'add' && describeStore(flags, io).startsWith('sqlite ')) {
      const path = configStorePath(flags, io);
      if (!existsSync(path))
        return answerMissingStoreFile(io, PRINCIPAL_WORDS, {
          path,
          action,
          explicit: values.store !== undefined,
          json: values.json,
        });
    }
    let store: ConfigStore;
    try {
      store = await openConfigStore(flags, io);
    } catch (error) {
      if (error instanceof UsageError) throw error; // an unreadable --nats-creds file: exit 2
      return fail(io, error);
    }
    try {
      if (action === 'add') return await add(io, store, name!, item!, values);
      if (action === 'list') return await list(io, store, values.json === true);
      return await remove(io, store, name!, values.json === true);
    } catch (error) {
      return fail(io, error);
    } finally {
      await store.close();
    }
  },
};

/** The item `add` stores, from the flags, without the token's hash yet; checked as the gateway reads it. */
function itemOf(name: string, values: Flags): PrincipalItem {
  try {
    checkPrincipalName(name);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const roles = [...new Set((values.role ?? []).flatMap(splitList))];
  if (roles.length === 0) {
    throw new UsageError(`missing --role: give one or more of ${ROLES.join(', ')} (e.g. --role caller)`);
  }
  const unknown = roles.filter((r) => !isRole(r));
  if (unknown.length > 0) {
    throw new UsageError(
      `unknown role '${unknown[0]}'${didYouMean(unknown[0]!, ROLES)}: --role takes ${ROLES.join(', ')}`,
    );
  }
  const item: PrincipalItem = { roles: roles as Role[], tokenHash: '' };
  if (values.user !== undefined) {
    if (values.user.trim() === '') throw new UsageError('--user needs a user name, e.g. --user alice');
    item.user = values.user;
  }
  if (values.tools !== undefined) {
    const tools = values.tools.flatMap(splitList);
    if (tools.length === 0)
      throw new UsageError("--tools needs one or more globs, e.g. --tools 'tell-*,get-*'");
    item.tools = [...new Set(tools)];
  }
  if (values.profile !== undefined) {
    if (!CONFIG_NAME_PATTERN.test(values.profile)) {
      throw new UsageError(
        `--profile needs a profile id (1-128 characters of [A-Za-z0-9_.=-]), got '${values.profile.slice(0, 80)}'`,
      );
    }
    item.profile = values.profile;
  }
  if (values.burst !== undefined && values.rate === undefined) {
    throw new UsageError('--burst needs --rate (e.g. --rate 20/s --burst 40)');
  }
  if (values.rate !== undefined) {
    const burst = values.burst === undefined ? undefined : Number(values.burst);
    if (burst !== undefined && (values.burst!.trim() === '' || !Number.isFinite(burst) || burst < 1)) {
      throw new UsageError(`--burst must be a number ≥ 1, got '${values.burst}'`);
    }
    try {
      parseRate(values.rate, burst);
    } catch (error) {
      throw new UsageError(`--rate: ${(error as Error).message}`);
    }
    item.rate = values.rate.trim();
    if (burst !== undefined) item.burst = burst;
  }
  const max = values['max-in-flight'];
  if (max !== undefined) {
    const n = Number(max);
    if (max.trim() === '' || !Number.isSafeInteger(n) || n < 1) {
      throw new UsageError(`--max-in-flight must be a whole number ≥ 1, got '${max}'`);
    }
    item.maxInFlight = n;
  }
  return item;
}

async function add(
  io: CliIO,
  store: ConfigStore,
  name: string,
  fields: PrincipalItem,
  values: Flags,
): Promise<number> {
  const token = newPrincipalToken();
  const item: PrincipalItem = { ...fields, tokenHash: hashToken(token), created: new Date().toISOString() };
  // The gateway must be able to read what is stored, or the token would never work.
  decodePrincipalItem(name, item as unknown as JsonValue);
  const force = values.force === true;
  const existed = force && (await store.get(PRINCIPAL_CONFIG_TYPE, name)) !== undefined;
  try {
    await store.put(
      PRINCIPAL_CONFIG_TYPE,
      name,
      item as unknown as JsonValue,
      force ? {} : { ifRevision: 0 },
    );
  } catch (error) {
    if (isToolbusError(error) && error.code === 'config-conflict') {
      io.stderr.write(
        `toolbus principal: principal '${name}' exists: remove it first, or --force to replace it ` +
          '(its old token stops working)\n',
      );
      return ExitCode.Error;
    }
    throw error;
  }
  const { tokenHash: _hash, ...shown } = item;
  if (values.json) writeJson(io, { name, token, ...shown });
  else io.stdout.write(`${token}\n`);
  io.stderr.write(
    `${existed ? 'replaced' : 'added'} principal '${name}' (${item.roles.join(', ')})` +
      `${existed ? '; its old token no longer works' : ''}. ` +
      `Store its token${values.json ? " (the JSON's 'token')" : ''} now: toolbus keeps only its hash.\n`,
  );
  return ExitCode.Ok;
}

/** One row of `list`: what a principal may do, never its hash. */
type Listed =
  | {
      name: string;
      roles: string[];
      user: string;
      tools?: string[];
      profile?: string;
      rate?: string;
      burst?: number;
      maxInFlight?: number;
      created?: string;
    }
  | { name: string; problem: string };

async function list(io: CliIO, store: ConfigStore, json: boolean): Promise<number> {
  const rows = (await store.list(PRINCIPAL_CONFIG_TYPE)).map((i) => listed(i.key, i.value));
  if (json) writeJson(io, rows);
  else if (rows.length === 0) {
    io.stderr.write('no principals; add one with toolbus principal add NAME --role caller\n');
  } else io.stdout.write(formatTable(rows));
  return ExitCode.Ok;
}

function listed(name: string, value: JsonValue): Listed {
  try {
    const { principal } = decodePrincipalItem(name, value);
    const raw = value as { [key: string]: JsonValue };
    const row: Listed = { name, roles: [...principal.roles], user: principal.user ?? name };
    if (principal.tools) row.tools = [...principal.tools];
    if (principal.profile) row.profile = principal.profile;
    if (principal.rate) {
      row.rate = principal.rate.text;
      if (typeof raw['burst'] === 'number') row.burst = raw['burst'];
    }
    if (principal.maxInFlight !== undefined) row.maxInFlight = principal.maxInFlight;
    if (typeof raw['created'] === 'string') row.created = raw['created'];
    return row;
  } catch (error) {
    // The message names the field that is wrong (after 'principal/NAME: '); it never quotes the hash.
    const message = (error as Error).message;
    const prefix = `${PRINCIPAL_CONFIG_TYPE}/${name}: `;
    return { name, problem: message.startsWith(prefix) ? message.slice(prefix.length) : message };
  }
}

function formatTable(rows: Listed[]): string {
  const header = ['NAME', 'ROLES', 'USER', 'TOOLS', 'RATE', 'MAX-IN-FLIGHT', 'CREATED'];
  const cells = rows.map((r) =>
    'problem' in r
      ? [r.name, `(not usable: ${r.problem})`]
      : [
          r.name,
          r.roles.join(','),
          r.user,
          r.tools?.join(',') ?? '-',
          r.rate === undefined ? '-' : r.burst === undefined ? r.rate : `${r.rate} burst ${r.burst}`,
          r.maxInFlight === undefined ? '-' : String(r.maxInFlight),
          r.created ?? '-',
        ],
  );
  const all = [header, ...cells];
  // A row with a problem has two cells: its name, then the problem, which is not padded.
  const full = all.filter((r) => r.length === header.length);
  const widths = header.map((_, c) => Math.max(...full.map((r) => r[c]!.length)));
  widths[0] = Math.max(...all.map((r) => r[0]!.length));
  const line = (r: string[]): string =>
    r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]!))).join('  ');
  return all.map((r) => `${line(r)}\n`).join('');
}

async function remove(io: CliIO, store: ConfigStore, name: string, json: boolean): Promise<number> {
  const existed = await store.delete(PRINCIPAL_CONFIG_TYPE, name);
  if (!existed) {
    const others = (await store.list(PRINCIPAL_CONFIG_TYPE)).map((i) => i.key);
    io.stderr.write(
      `toolbus principal: principal '${name}' not found${didYouMean(name, others)}` +
        (name === 'admin'
          ? "; 'admin' is the token of 'toolbus up' ($TOOLBUS_TOKEN or $TOOLBUS_HOME/token), not a stored principal\n"
          : others.length > 0
            ? `; principals: ${others.slice(0, 10).join(', ')}${others.length > 10 ? ', ...' : ''}\n`
            : '; there are no principals (see toolbus principal list)\n'),
    );
    return ExitCode.Error;
  }
  if (json) writeJson(io, { name, removed: true });
  else io.stdout.write(`removed principal '${name}': its token no longer works\n`);
  return ExitCode.Ok;
}

function fail(io: CliIO, error: unknown): number {
  io.stderr.write(`toolbus principal: ${error instanceof Error ? error.message : String(error)}\n`);
  return ExitCode.Error;
}

function writeJson(io: CliIO, value: unknown): void {
  io.stdout.write(JSON.stringify(value, null, 2) + '\n');
}
