/**
 * @module `toolbus config`: put, get, list and delete config items in the SQLite file or on NATS.
 */
import { existsSync } from 'node:fs';
import {
  configWriteRefusal,
  parseJsonValue,
  showConfigValue,
  type ConfigItem,
  type ConfigStore,
} from '../../config/index.js';
import {
  ALLOW_COMMANDS_VARIABLE,
  ALLOW_ENV_VARIABLE,
  assertConfigAllowed,
  configAllowlistFromEnv,
} from '../../registry/index.js';
import type { JsonValue } from '../../schema/index.js';
import { didYouMean, isToolbusError } from '../../errors/index.js';
import { CONNECTION_FLAGS, CONNECTION_FLAGS_HELP, parseCommandArgs } from '../args.js';
import { ExitCode, UsageError, type CliCommand, type CliIO } from '../command.js';
import { checkConfigItem, toolsUsingService } from '../config-check.js';
import {
  answerMissingStoreFile,
  configStorePath,
  describeStore,
  openConfigStore,
  type MissingStoreWords,
} from '../connect.js';
import { NATS_SECURITY_FLAGS, NATS_SECURITY_HELP, NatsSecurity } from '../nats-security.js';

/**
 * The config types toolbus reads. `put` refuses other types unless `--any-type` is given, so a typo
 * (`tools/x`) is caught instead of being stored where nothing will ever read it.
 */
export const KNOWN_CONFIG_TYPES = {
  'tool-service':
    'a tool service: id, request-queue, response-queue, config-params, delivery (request-response or durable)',
  tool: 'a tool the agent sees: type (tool-service, prompt, text-completion, function, http, mcp-tool), name, ...',
  mcp: 'an MCP server that mcp-tool items refer to',
  prompt: "a prompt template that 'prompt' tools may refer to by id",
  resource:
    'a resource for MCP clients: uri or uri-template, name, description, mime-type, and text, blob or service',
  principal: "a named API key: roles, token hash, tools, rate (written by 'toolbus principal add')",
  role: 'settings of a role for every principal holding it: tools, rate, maxInFlight',
  quota: "a tool's rate limit: rate, burst, per (principal or all)",
  profile: 'a named subset of the tools: tools (globs), tags, exclude (globs)',
} as const;

const HELP = `Usage: toolbus config <put|get|list|delete> [options]

Manage config items (tool services, tools, MCP servers, prompts). Items are addressed as TYPE/KEY,
e.g. tool-service/joke-service or tool/tell-joke. Running agents pick up changes without a restart.

  toolbus config put TYPE/KEY < item.json       value read from stdin
  toolbus config put TYPE/KEY 'JSON'            value given inline
  toolbus config put --type T --key K --stdin   the same, TrustGraph's tg-put-config-item syntax
  toolbus config put --type T --key K --value V
  toolbus config get TYPE/KEY                   prints the value as JSON
  toolbus config list [TYPE]                    lists TYPE/KEY and revision
  toolbus config delete TYPE/KEY

Options:
  --type T           the item type (instead of TYPE/KEY)
  --key K            the item key (instead of TYPE/KEY)
  --value JSON       the value for put
  --stdin            read the value for put from stdin (the default when no value is given)
  --if-revision N    put/delete only if the item is still at revision N (0: only if it does not exist)
  --any-type         allow put of a type toolbus does not read (known: ${Object.keys(KNOWN_CONFIG_TYPES).join(', ')})
  --force            store an item even though the registry would skip it (exit 0 with a warning)
  --json             machine-readable output
${CONNECTION_FLAGS_HELP}

${NATS_SECURITY_HELP}

put checks tool-service items (and the tools that use them), the type of tool items, and tool items
of type tool-service against their service, as the registry will. An item the registry would skip
is not stored: put says why and exits 1 (--force stores it anyway). Warnings (e.g. a tool whose
service item is not there yet: items may arrive in any order) are printed and the item is stored.

Config may run a program (an mcp item's "command") or read an environment variable (a header
value {"env": "NAME"} of an http tool) only when the operator allows it, so that whoever can write
config cannot run commands or send secrets anywhere:
  ${ALLOW_COMMANDS_VARIABLE}   programs config may start, comma-separated; an entry may add the
                           arguments a call must start with ('npx -y @scope/server'); * allows all
  ${ALLOW_ENV_VARIABLE}        variables config may read, comma-separated; * is a wildcard (WEATHER_*)
Both default to none. put refuses such an item unless its environment allows it. The registry
enforces them when it builds tools, so set them for 'toolbus up' (and 'toolbus mcp import') too.

Exit codes: 0 success, 1 error (bad JSON, an item that would not go live, item not found, conflict,
not allowed, store problem), 2 usage.

Examples (a tool service, then a tool that uses it, as in TrustGraph's tool-services spec; many
tools can share one service, each with its own values for the service's config-params):
  toolbus config put tool-service/joke-service '{"id":"joke-service",
    "request-queue":"non-persistent://tg/request/joke",
    "response-queue":"non-persistent://tg/response/joke",
    "config-params":[{"name":"style","required":false}]}'
  toolbus config put tool/tell-joke '{"type":"tool-service","name":"tell-joke",
    "description":"Tell a joke on a topic","service":"joke-service","style":"pun",
    "arguments":[{"name":"topic","type":"string","description":"What the joke is about"}]}'
  toolbus config put --type tool --key tell-joke --stdin < tell-joke.json
  toolbus config list tool --json

Other tool types (field 'type' of a tool item): text-completion, prompt, function, http, mcp-tool.
A prompt tool item is also served to MCP clients as a prompt of the same name (prompts/list,
prompts/get, with its arguments; an argument's "enum" values are its completions), with or
without a model.

Resources (resource/ID) are served to MCP clients (/mcp of 'toolbus up', 'toolbus mcp serve'):
  uri            one resource's URI, with a scheme ("docs://readme"); or
  uri-template   a family of URIs, RFC 6570 level 1 ("weather://city/{name}"): each {variable}
                 stands for one path segment (no '/'), read through 'service'
  name           a short name (default: ID); title, description: for people
  mime-type      "text/plain", "image/png", ...
  text | blob    a static resource's contents (blob: base64); or
  service        a tool-service id: a read calls it with the template's variables as arguments
                 (none for a fixed uri) and the item's values for the service's config-params,
                 as a tool item gives them; its answer is the contents
  variables      optional, for a template: [{"name", "description", "enum": [values]}]; the
                 enum values are checked on read and offered as completions
  toolbus config put resource/readme '{"uri":"docs://readme","mime-type":"text/markdown",
    "description":"The project README","text":"# Hello"}'
  toolbus config put resource/joke '{"uri-template":"joke://{topic}","mime-type":"text/plain",
    "service":"joke-service","style":"pun","variables":[{"name":"topic","enum":["cats","dogs"]}]}'
A change of a static item sends notifications/resources/updated to clients subscribed to it, and
a change of the set sends notifications/resources/list_changed.

A tool service with "delivery": "durable" takes its calls from a work queue: they wait for a
replica, survive a replica that dies (on NATS), and keep their results (toolbus call --async). A
tool item's "idempotent": true lets such a service answer a repeated idempotency key from the first
outcome.
`;

/** What a read of a home without a config file says. */
const CONFIG_WORDS: MissingStoreWords = {
  command: 'toolbus config',
  items: 'config items',
  add: 'toolbus config put TYPE/KEY < item.json',
  creates: 'toolbus config put',
};

const FLAGS = {
  ...CONNECTION_FLAGS,
  ...NATS_SECURITY_FLAGS,
  type: { type: 'string' },
  key: { type: 'string' },
  value: { type: 'string' },
  stdin: { type: 'boolean' },
  json: { type: 'boolean' },
  'if-revision': { type: 'string' },
  'any-type': { type: 'boolean' },
  force: { type: 'boolean' },
} as const;

type Flags = ReturnType<typeof parseCommandArgs<typeof FLAGS>>['values'];

/** `toolbus config`. */
export const command: CliCommand = {
  name: 'config',
  summary: 'put, get, list and delete config items (tool services, tools, MCP servers)',
  help: HELP,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(argv, FLAGS);
    const [action, ...rest] = positionals;
    if (!action) throw new UsageError('missing action: expected put, get, list or delete');
    if (!['put', 'get', 'list', 'delete'].includes(action)) {
      throw new UsageError(`unknown action '${action}': expected put, get, list or delete`);
    }
    // A flag the action does not use would be ignored silently (e.g. get --if-revision checks nothing).
    const usedBy: Record<string, string[]> = {
      'if-revision': ['put', 'delete'],
      value: ['put'],
      stdin: ['put'],
      'any-type': ['put'],
      force: ['put'],
    };
    for (const [flag, actions] of Object.entries(usedBy)) {
      if (values[flag as keyof Flags] !== undefined && !actions.includes(action)) {
        throw new UsageError(`--${flag} applies to ${actions.join(' and ')}, not to ${action}`);
      }
    }
    const ifRevision = parseRevision(values['if-revision']);
    // Check everything that can be checked before opening the store.
    let address: { type: string; key?: string | undefined } | undefined;
    let valueText: string | undefined;
    if (action === 'list') {
      if (rest.length > 1) throw new UsageError(`list takes at most one TYPE, got ${rest.length} arguments`);
      const type = values.type ?? rest[0];
      address = type === undefined ? undefined : { type: type.replace(/\/$/, '') };
    } else {
      const maxArgs = action === 'put' ? 2 : 1;
      if (rest.length > maxArgs) {
        throw new UsageError(
          `${action} takes TYPE/KEY${action === 'put' ? ' [JSON]' : ''}, got ${rest.length} arguments`,
        );
      }
      const target = parseAddress(rest[0], values, action);
      address = target;
      if (action === 'put') {
        // Tokens toolbus keeps (mcp-oauth/<id>) are never written by hand, whatever the flags.
        const written = configWriteRefusal(target.type, target.key);
        if (written !== undefined) {
          io.stderr.write(`toolbus config: error: ${written}\n`);
          return ExitCode.Error;
        }
        assertKnownType(target.type, values['any-type'] === true);
        valueText = await readValue(rest[1], values, io);
        // Refused before the store is opened: nothing is stored. Text that is not JSON passes here
        // and is reported by put (with the line and column).
        const refusal = refusalOf(io, target.type, target.key, valueText);
        if (refusal !== undefined) {
          io.stderr.write(`toolbus config: error: ${refusal}\n`);
          return ExitCode.Error;
        }
      }
    }

    const flags = {
      nats: values.nats,
      store: values.store,
      natsSecurity: NatsSecurity.fromFlags(values, io),
    };
    // Reading must not create a file: a mistyped --store would otherwise be created (with its folders)
    // and reported as an empty store, hiding the typo.
    const where = describeStore(flags, io);
    if (action !== 'put' && where.startsWith('sqlite ')) {
      const path = configStorePath(flags, io);
      if (!existsSync(path))
        return answerMissingStoreFile(io, CONFIG_WORDS, {
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
      if (error instanceof UsageError) throw error; // an unreadable --nats-creds file: exit 2, with usage
      return fail(io, error);
    }
    try {
      switch (action) {
        case 'put': {
          const { type, key } = address as { type: string; key: string };
          // Say now what the registry will say. Text that is not JSON is left to put, which reports
          // the line and column.
          const parsed = tryParse(valueText!);
          const findings = parsed.ok ? await checkConfigItem(store, type, key, parsed.value) : [];
          const force = values.force === true;
          if (!force && findings.some((f) => f.skipped)) {
            for (const f of findings.filter((x) => x.skipped)) {
              io.stderr.write(`toolbus config: error: ${type}/${key} would not go live: ${f.message}\n`);
            }
            io.stderr.write(
              'Nothing was stored. Fix the item and put it again, or pass --force to store it anyway.\n',
            );
            return ExitCode.Error;
          }
          const revision = await store.put(
            type,
            key,
            valueText!,
            ifRevision === undefined ? {} : { ifRevision },
          );
          if (values.json) writeJson(io, { type, key, revision });
          else io.stdout.write(`put ${type}/${key} (revision ${revision})\n`);
          for (const f of findings) {
            io.stderr.write(
              f.skipped
                ? `toolbus config: warning: ${type}/${key} stored with --force, but it will not go live until this is fixed: ${f.message}\n`
                : `toolbus config: warning: ${type}/${key}: ${f.message}\n`,
            );
          }
          return ExitCode.Ok;
        }
        case 'get': {
          const { type, key } = address as { type: string; key: string };
          const item = await store.get(type, key);
          if (!item) return await notFound(io, store, type, key);
          const shown = shownItem(item);
          if (values.json) writeJson(io, shown);
          else writeJson(io, shown.value);
          if (shown.withheld !== undefined) {
            io.stderr.write(
              `toolbus config: ${type}/${key} holds secrets; withheld: ${shown.withheld.join(', ')}\n`,
            );
          }
          return ExitCode.Ok;
        }
        case 'list': {
          const items = await store.list(address?.type);
          if (values.json) writeJson(io, items.map(shownItem));
          else if (items.length === 0) {
            io.stderr.write(
              address
                ? `no items of type '${address.type}'\n`
                : 'no config items; add one with toolbus config put TYPE/KEY < item.json\n',
            );
          } else io.stdout.write(formatList(items));
          return ExitCode.Ok;
        }
        default: {
          const { type, key } = address as { type: string; key: string };
          const existed = await store.delete(type, key, ifRevision === undefined ? {} : { ifRevision });
          if (!existed) return await notFound(io, store, type, key);
          if (values.json) writeJson(io, { type, key, deleted: true });
          else io.stdout.write(`deleted ${type}/${key}\n`);
          const orphans = type === 'tool-service' ? await toolsUsingService(store, key) : [];
          if (orphans.length > 0) {
            io.stderr.write(
              `toolbus config: warning: ${orphans.join(', ')} ` +
                (orphans.length === 1
                  ? 'uses this service and leaves the registry until it is back (delete it too if it should go)\n'
                  : 'use this service and leave the registry until it is back (delete them too if they should go)\n'),
            );
          }
          return ExitCode.Ok;
        }
      }
    } catch (error) {
      return fail(io, error);
    } finally {
      await store.close();
    }
  },
};

/**
 * Why the allowlist of `io.env` (TOOLBUS_ALLOW_COMMANDS, TOOLBUS_ALLOW_ENV) refuses the item, or
 * `undefined` when it allows it (or the text is not JSON).
 */
function refusalOf(io: CliIO, type: string, key: string, text: string): string | undefined {
  let value: JsonValue;
  try {
    value = parseJsonValue(text);
  } catch {
    return undefined;
  }
  try {
    assertConfigAllowed(configAllowlistFromEnv(io.env), type, key, value);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

function parseRevision(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new UsageError(
      `--if-revision must be a whole number >= 0 (0: only if the item does not exist), got '${text}'`,
    );
  }
  return n;
}

/** Reads `TYPE/KEY` or `--type`/`--key`, saying what is missing. */
function parseAddress(
  positional: string | undefined,
  values: Flags,
  action: string,
): { type: string; key: string } {
  if (positional !== undefined && (values.type !== undefined || values.key !== undefined)) {
    throw new UsageError(`give either TYPE/KEY or --type and --key, not both`);
  }
  if (positional === undefined) {
    if (values.type === undefined && values.key === undefined) {
      throw new UsageError(
        `missing item: ${action} TYPE/KEY (e.g. tool-service/joke-service) or --type T --key K`,
      );
    }
    if (values.type === undefined)
      throw new UsageError(`missing --type: pass --type T with --key '${values.key}'`);
    if (values.key === undefined) {
      throw new UsageError(
        `missing key: pass --key K with --type '${values.type}' (e.g. --key joke-service)`,
      );
    }
    return { type: values.type, key: values.key };
  }
  const slash = positional.indexOf('/');
  if (slash < 0 || slash === positional.length - 1) {
    const type = slash < 0 ? positional : positional.slice(0, -1);
    throw new UsageError(`missing key in '${positional}': write TYPE/KEY, e.g. ${type}/my-item`);
  }
  if (slash === 0)
    throw new UsageError(`missing type in '${positional}': write TYPE/KEY, e.g. tool${positional}`);
  return { type: positional.slice(0, slash), key: positional.slice(slash + 1) };
}

function assertKnownType(type: string, anyType: boolean): void {
  if (anyType || type in KNOWN_CONFIG_TYPES) return;
  const known = Object.keys(KNOWN_CONFIG_TYPES);
  throw new UsageError(
    `unknown config type '${type}'${didYouMean(type, known)}: known types are ` +
      `${known.join(', ')}. To store another type anyway, pass --any-type`,
  );
}

async function readValue(inline: string | undefined, values: Flags, io: CliIO): Promise<string> {
  const sources = [inline !== undefined, values.value !== undefined, values.stdin === true].filter(
    Boolean,
  ).length;
  if (sources > 1) throw new UsageError('give the value one way: inline JSON, --value JSON or --stdin');
  if (inline !== undefined) return inline;
  if (values.value !== undefined) return values.value;
  if (!values.stdin && (io.stdin as { isTTY?: boolean }).isTTY) {
    throw new UsageError('missing value: pipe JSON on stdin (< item.json), or pass --value JSON');
  }
  const chunks: Buffer[] = [];
  for await (const chunk of io.stdin)
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  // Editors on Windows save JSON with a byte-order mark, which JSON.parse rejects as an invisible token.
  const text = Buffer.concat(chunks)
    .toString('utf8')
    .replace(/^\uFEFF/, '');
  if (text.trim() === '')
    throw new UsageError('missing value: stdin was empty; pipe a JSON value (< item.json)');
  return text;
}

async function notFound(io: CliIO, store: ConfigStore, type: string, key: string): Promise<number> {
  const others = (await store.list(type)).map((i) => i.key);
  io.stderr.write(
    `toolbus config: item '${type}/${key}' not found` +
      (others.length > 0
        ? `; existing ${type} keys: ${others.slice(0, 10).join(', ')}${others.length > 10 ? ', ...' : ''}\n`
        : `; there are no items of type '${type}' (see toolbus config list)\n`),
  );
  return ExitCode.Error;
}

function fail(io: CliIO, error: unknown): number {
  const message = error instanceof Error ? error.message : String(error);
  let hint = '';
  if (isToolbusError(error)) {
    if (error.code === 'invalid-config' && message.includes('invalid JSON')) {
      hint = '\nFix the JSON at that line and column, then run the command again.';
    } else if (error.code === 'config-conflict') {
      hint =
        '\nSomeone changed the item meanwhile: read it again (toolbus config get --json) and retry with its revision.';
    }
  }
  io.stderr.write(`toolbus config: ${message}${hint}\n`);
  return ExitCode.Error;
}

/** An item as it may be printed: secrets toolbus keeps (OAuth tokens) withheld and named in `withheld`. */
function shownItem(item: ConfigItem): ConfigItem & { withheld?: string[] } {
  const { value, withheld } = showConfigValue(item.type, item.value);
  return withheld.length === 0 ? item : { ...item, value, withheld };
}

function writeJson(io: CliIO, value: JsonValue | ConfigItem | ConfigItem[] | Record<string, unknown>): void {
  io.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

function formatList(items: ConfigItem[]): string {
  const width = Math.max(...items.map((i) => i.type.length + i.key.length + 1));
  return items.map((i) => `${`${i.type}/${i.key}`.padEnd(width)}  revision ${i.revision}\n`).join('');
}

function tryParse(text: string): { ok: true; value: JsonValue } | { ok: false } {
  try {
    return { ok: true, value: parseJsonValue(text) };
  } catch {
    return { ok: false };
  }
}
