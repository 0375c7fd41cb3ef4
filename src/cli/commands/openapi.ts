/**
 * @module `toolbus openapi import`: one `http` tool item per operation of an OpenAPI 3.0 or 3.1 document.
 * The file is read, validated and dereferenced with `@readme/openapi-parser` (loaded only here), the
 * pure converter in adapters/http makes the items, and they are written as `toolbus mcp import` writes
 * its own.
 */
import { stat } from 'node:fs/promises';
import { dirname, isAbsolute, resolve, sep } from 'node:path';
import type { CliCommand, CliIO } from '../command.js';
import { ExitCode, UsageError } from '../command.js';
import { CONNECTION_FLAGS, CONNECTION_FLAGS_HELP, parseCommandArgs } from '../args.js';
import { openConfigStore } from '../connect.js';
import { NATS_SECURITY_FLAGS, NATS_SECURITY_HELP, NatsSecurity } from '../nats-security.js';
import { httpToolFromConfig, openApiServerUrl, openApiToolConfigs } from '../../adapters/http/index.js';
import type { OpenApiToolItem } from '../../adapters/http/index.js';
import { ALLOW_ENV_VARIABLE, assertConfigAllowed, configAllowlistFromEnv } from '../../registry/index.js';
import { globMatches } from '../../schema/index.js';
import { didYouMean, isToolbusError } from '../../errors/index.js';

const help = `Usage: toolbus openapi import <spec.json|spec.yaml> --id NAME [options]

Read an OpenAPI 3.0 or 3.1 document (JSON or YAML; validated, $refs resolved) and write one
tool/<name> item of type http for each operation: its path, query and header parameters and its
JSON request body become the tool's arguments, with their descriptions, required flags and enums;
auth comes from environment variables. Running registries pick the tools up at once.

Options:
  --id NAME          a short name for the API (required): tools are NAME-<operationId>, tagged
                     openapi:NAME, and read their secrets from NAME_<SCHEME> (see Auth)
  --include a,b      import only these operations (operationIds; an operation without one is
                     named from its method and path, e.g. get_pet_petId)
  --server URL       the API's base URL instead of the spec's servers[0].url (needed when that
                     is relative, such as /api/v3, or to call a test server or a proxy)
  --prefix P         put P before each operationId instead of 'NAME-' (--prefix '' for none)
  --auth-env S=VAR   read the secret of security scheme S from the variable VAR (repeat the
                     flag, or separate with commas); just VAR when the spec has one scheme
  --dry-run          print the items as JSON instead of writing them
  --overwrite        replace tool items that already exist (default: leave them)
  --json             machine-readable output
${CONNECTION_FLAGS_HELP}
  -h, --help         show this help

${NATS_SECURITY_HELP}

Auth: each operation's security requirement becomes headers whose values are read from the
environment when the tool is called (never stored): http bearer as 'Authorization: Bearer $VAR',
http basic as 'Authorization: Basic $VAR' (VAR holds base64 of user:password), an apiKey in a
header as that header, in a cookie as 'Cookie: name=$VAR'. VAR is NAME_<SCHEME> in upper case
(petstore + api_key: PETSTORE_API_KEY), or what --auth-env says. Config may read only variables
listed in ${ALLOW_ENV_VARIABLE}: set it for this command and for 'toolbus up', or the import is
refused and says the exact setting to use.

Not supported, each reported on a warning line: an apiKey in the query string; oauth2 and
openIdConnect (no OAuth flow is run: with an access token you got yourself, --auth-env S=VAR
sends it as a bearer token); mutualTLS; request bodies that are not application/json (the
operation is skipped); HEAD, OPTIONS and TRACE operations (skipped); cookie parameters.

Exit codes: 0 success, 1 error (a file that is not OpenAPI, a broken $ref, a variable not
allowed, store problem), 2 usage (a bad flag, a missing file, an unknown --include name).

Examples:
  export ${ALLOW_ENV_VARIABLE}=PETSTORE_API_KEY
  toolbus openapi import petstore.yaml --id petstore --server https://petstore3.swagger.io/api/v3
  toolbus openapi import petstore.yaml --id petstore --include getPetById,findPetsByStatus --dry-run
  PETSTORE_API_KEY=... toolbus up
  toolbus call petstore-getPetById petId=1
`;

const FLAGS = {
  id: { type: 'string' },
  include: { type: 'string' },
  server: { type: 'string' },
  prefix: { type: 'string' },
  'auth-env': { type: 'string', multiple: true },
  'dry-run': { type: 'boolean' },
  overwrite: { type: 'boolean' },
  json: { type: 'boolean' },
  ...CONNECTION_FLAGS,
  ...NATS_SECURITY_FLAGS,
} as const;

/** The longest parser message printed (a broken spec can produce pages). */
const MAX_MESSAGE_CHARS = 2_000;

/** What the spec file says, as the parser read it. */
interface LoadedSpec {
  document: Record<string, unknown>;
  warnings: string[];
}

/** `text` with the characters that are special in a regular expression escaped. */
function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The parser's message with the machine's paths replaced by what the user typed, and cut to size.
 */
function shownMessage(message: string, absolute: string, typed: string, cwd: string): string {
  const typedDir = dirname(typed);
  // One pass, longest first, so that no replacement is replaced again.
  const replacements = new Map<string, string>([
    [absolute, typed],
    [dirname(absolute) + sep, typedDir === '.' ? '' : typedDir + sep],
    [cwd + sep, ''],
  ]);
  const pattern = new RegExp([...replacements.keys()].map(escapeRegExp).join('|'), 'g');
  const out = message.replace(pattern, (match) => replacements.get(match) ?? match);
  return out.length > MAX_MESSAGE_CHARS ? `${out.slice(0, MAX_MESSAGE_CHARS)}…` : out;
}

/** Validates and dereferences the spec with @readme/openapi-parser (loaded here, not at CLI start). */
async function loadSpec(file: string, io: CliIO): Promise<LoadedSpec> {
  const absolute = isAbsolute(file) ? file : resolve(io.cwd, file);
  const info = await stat(absolute).catch(() => undefined);
  if (info === undefined) throw new UsageError(`cannot read the spec '${file}': there is no such file`);
  if (!info.isFile()) throw new UsageError(`cannot read the spec '${file}': it is not a file`);
  const parser = await import('@readme/openapi-parser');
  const quoted = `'${file}'`;
  const fail = (what: string, message: string): never => {
    throw new Error(`${what}: ${shownMessage(message, absolute, file, io.cwd)}`);
  };
  let result: Awaited<ReturnType<typeof parser.validate>>;
  try {
    result = await parser.validate(absolute);
  } catch (error) {
    return fail(`cannot read the spec ${quoted}`, (error as Error).message);
  }
  if (!result.valid) {
    if (result.errors.some((e) => /not a valid API definition/.test(e.message))) {
      fail(
        `${quoted} is not an OpenAPI document`,
        "expected a JSON or YAML object with an 'openapi' field of 3.0.x or 3.1.x",
      );
    }
    const errors = result.errors.slice(0, 5).map((e) => e.message.trim());
    const more = result.errors.length - errors.length + result.additionalErrors;
    fail(
      `the spec ${quoted} is not valid OpenAPI`,
      errors.join('\n  ') + (more > 0 ? `\n  (and ${more} more)` : ''),
    );
  }
  let document: unknown;
  try {
    document = await parser.dereference(absolute);
  } catch (error) {
    return fail(`cannot resolve the $refs of the spec ${quoted}`, (error as Error).message);
  }
  return {
    document: document as Record<string, unknown>,
    warnings: result.warnings.map((w) => shownMessage(w.message, absolute, file, io.cwd)),
  };
}

/** `--auth-env` values: `SCHEME=VAR` entries, or one bare `VAR` when the spec has a single scheme. */
function parseAuthEnv(values: readonly string[], document: Record<string, unknown>): Record<string, string> {
  const components = document['components'];
  const schemes = Object.keys(
    (typeof components === 'object' && components !== null
      ? (components as Record<string, unknown>)['securitySchemes']
      : undefined) ?? {},
  );
  const out: Record<string, string> = {};
  for (const entry of values.flatMap((v) => v.split(',')).map((v) => v.trim())) {
    if (entry === '') continue;
    const equals = entry.indexOf('=');
    if (equals < 0) {
      if (schemes.length !== 1) {
        throw new UsageError(
          `--auth-env '${entry}' names no security scheme, and the spec has ` +
            (schemes.length === 0
              ? 'none'
              : `${schemes.length} (${schemes.join(', ')}): write --auth-env SCHEME=${entry}`),
        );
      }
      out[schemes[0]!] = entry;
    } else {
      out[entry.slice(0, equals).trim()] = entry.slice(equals + 1).trim();
    }
  }
  return out;
}

/** The variables the items read that the allowlist of `io.env` does not list, with the items. */
function refusedVariables(io: CliIO, items: readonly OpenApiToolItem[]): Map<string, string[]> {
  const allowlist = configAllowlistFromEnv(io.env);
  const refused = new Map<string, string[]>();
  for (const item of items) {
    try {
      assertConfigAllowed(allowlist, 'tool', item.key, item.value);
    } catch (error) {
      if (!isToolbusError(error) || error.code !== 'not-allowed') throw error;
      for (const name of item.env) {
        if (allowlist.env.some((pattern) => globMatches(pattern, name))) continue;
        refused.set(name, [...(refused.get(name) ?? []), `tool/${item.key}`]);
      }
    }
  }
  return refused;
}

function refusalMessage(io: CliIO, refused: Map<string, string[]>): string {
  const names = [...refused.keys()];
  const existing = configAllowlistFromEnv(io.env).env;
  const items = [...new Set([...refused.values()].flat())];
  const shownItems =
    items.slice(0, 5).join(', ') + (items.length > 5 ? `, … (${items.length - 5} more)` : '');
  const plural = names.length > 1;
  return (
    `the tools would read the environment variable${plural ? 's' : ''} ${names.map((n) => `'${n}'`).join(', ')} ` +
    `(${shownItems}), which ${plural ? 'are' : 'is'} not allowed: config may read only variables listed in ` +
    `${ALLOW_ENV_VARIABLE}. To allow ${plural ? 'them' : 'it'}, set ${ALLOW_ENV_VARIABLE}=${[...existing, ...names].join(',')} ` +
    `in the environment of 'toolbus up' (and of this command), or choose other names with --auth-env SCHEME=VARIABLE`
  );
}

async function importSpec(argv: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseCommandArgs(argv, FLAGS);
  const [file, extra] = positionals;
  if (file === undefined) {
    throw new UsageError("missing the spec file: 'toolbus openapi import <spec.json|spec.yaml> --id NAME'");
  }
  if (extra !== undefined) throw new UsageError(`unexpected argument '${extra}'`);
  const id = values.id;
  if (id === undefined || id === '') {
    throw new UsageError(
      'missing --id NAME: a short name for this API (e.g. --id petstore); it starts the tool names, ' +
        'tags them openapi:NAME and names the auth variables',
    );
  }
  const include = values.include
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const write = (line: string): void => void io.stderr.write(`toolbus openapi: ${line}\n`);

  const spec = await loadSpec(file, io);
  const authEnv = parseAuthEnv(values['auth-env'] ?? [], spec.document);
  const server = values.server ?? openApiServerUrl(spec.document);
  if (server === undefined || !/^https?:\/\//i.test(server)) {
    throw new UsageError(
      server === undefined
        ? `the spec '${file}' names no server: pass --server with the URL the API is served at`
        : `the spec's server URL '${server}' is not absolute: pass --server with the URL the API is served at, e.g. --server https://api.example.com${server.startsWith('/') ? server : ''}`,
    );
  }
  let converted: ReturnType<typeof openApiToolConfigs>;
  try {
    converted = openApiToolConfigs(spec.document, id, {
      serverUrl: server,
      authEnv,
      ...(values.prefix !== undefined ? { prefix: values.prefix } : {}),
      ...(include ? { include } : {}),
    });
  } catch (error) {
    // Options that do not fit the spec (an id, a prefix, a scheme name): usage, exit 2.
    if (isToolbusError(error) && error.code === 'invalid-arguments') throw new UsageError(error.message);
    throw error;
  }
  if (converted.missing.length > 0) {
    const known = converted.operations;
    const problems = converted.missing.map((name) => `'${name}'${didYouMean(name, known)}`);
    throw new UsageError(
      `--include: the spec has no operation ${problems.join(', ')}; its operations: ` +
        known.slice(0, 20).join(', ') +
        (known.length > 20 ? `, … (${known.length - 20} more)` : ''),
    );
  }
  const warnings = [...spec.warnings.map((w) => `the spec: ${w}`), ...converted.warnings];
  // Each item is built as the registry will build it, so none is written that would not go live.
  const items: OpenApiToolItem[] = [];
  for (const item of converted.items) {
    try {
      httpToolFromConfig(item.value, { owner: `config 'tool/${item.key}'`, env: {} });
      items.push(item);
    } catch (error) {
      warnings.push(
        `operation '${item.operation}' (${item.method} ${item.path}) skipped: ${(error as Error).message}`,
      );
    }
  }
  for (const warning of warnings) write(`warning: ${warning}`);

  const refused = refusedVariables(io, items);
  if (values['dry-run']) {
    const shown = items.map((item) => ({ type: 'tool', key: item.key, value: item.value }));
    io.stdout.write(JSON.stringify(shown, null, 2) + '\n');
    if (refused.size > 0) write(`warning: writing them would be refused: ${refusalMessage(io, refused)}`);
    return ExitCode.Ok;
  }
  if (refused.size > 0) {
    write(`error: ${refusalMessage(io, refused)}. Nothing was written.`);
    return ExitCode.Error;
  }
  if (items.length === 0) {
    io.stdout.write(
      converted.operations.length === 0
        ? `the spec '${file}' has no operations; nothing written.\n`
        : 'every selected operation was skipped (see the warnings); nothing written.\n',
    );
    return ExitCode.Ok;
  }

  const natsSecurity = NatsSecurity.fromFlags(values, io);
  const store = await openConfigStore({ nats: values.nats, store: values.store, natsSecurity }, io);
  const results: { key: string; operation: string; method: string; path: string; status: string }[] = [];
  try {
    for (const item of items) {
      let status: 'written' | 'exists' = 'written';
      try {
        await store.put('tool', item.key, item.value, values.overwrite ? {} : { ifRevision: 0 });
      } catch (error) {
        if (isToolbusError(error) && error.code === 'config-conflict') status = 'exists';
        else throw error;
      }
      results.push({
        key: `tool/${item.key}`,
        operation: item.operation,
        method: item.method,
        path: item.path,
        status,
      });
    }
  } finally {
    await store.close();
  }
  const env = [...new Set(items.flatMap((item) => item.env))];
  if (values.json) {
    io.stdout.write(JSON.stringify({ tools: results, env, warnings }, null, 2) + '\n');
    return ExitCode.Ok;
  }
  for (const r of results) {
    const note = r.status === 'exists' ? ' (exists; left alone, use --overwrite)' : '';
    io.stdout.write(`${r.key}  <- ${r.method} ${r.path} (${r.operation})${note}\n`);
  }
  const written = results.filter((r) => r.status === 'written').length;
  io.stdout.write(`${written} of ${results.length} tools written.\n`);
  if (env.length > 0) {
    io.stdout.write(
      `They read ${env.join(', ')} from the environment when called: set ${env.length === 1 ? 'it' : 'them'} ` +
        `for 'toolbus up', with ${ALLOW_ENV_VARIABLE} allowing ${env.length === 1 ? 'it' : 'them'}.\n`,
    );
  }
  return ExitCode.Ok;
}

/** The `openapi` command. */
export const command: CliCommand = {
  name: 'openapi',
  summary: 'import the operations of an OpenAPI spec as http tools',
  help,
  async run(argv, io) {
    const [sub, ...rest] = argv;
    if (sub === 'import') return importSpec(rest, io);
    throw new UsageError(sub ? `unknown subcommand '${sub}'; expected 'import'` : "expected 'import'");
  },
};
