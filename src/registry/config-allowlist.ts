/**
 * @module What config may make toolbus do beyond calling tools: run a local program (an `mcp/<id>` item
 * with `command`) or read an environment variable of the process (an `{ "env": NAME }` header value).
 * Whoever can write config could otherwise run any command as the user running toolbus, or send any of
 * its secrets to any URL; so both work only when the operator lists them, in the environment of the
 * process that builds the tools (never in config, which is what it guards).
 */
import { globMatches, type JsonValue } from '../schema/index.js';
import { ToolbusError } from '../errors/index.js';

/** The variable listing the programs config may run, e.g. `npx,node,/opt/mcp/weather-server`. */
export const ALLOW_COMMANDS_VARIABLE = 'TOOLBUS_ALLOW_COMMANDS';
/** The variable listing the environment variables config may read, e.g. `WEATHER_TOKEN,GITHUB_*`. */
export const ALLOW_ENV_VARIABLE = 'TOOLBUS_ALLOW_ENV';

/**
 * The operator's allowlist. Empty lists (the default) allow neither.
 *
 * - A `commands` entry is a program exactly as config names it (`npx`, `/usr/local/bin/weather-mcp`),
 *   optionally followed by the arguments a call must start with (`npx -y @modelcontextprotocol/server-everything`
 *   allows that package only). Words are separated by spaces; put one that contains spaces in double
 *   quotes (`"C:\Program Files\nodejs\node.exe" server.js`). `*` allows every program.
 * - An `env` entry is a variable name, or a glob where `*` stands for any run of characters (`WEATHER_*`).
 *   It allows config both to read that variable of toolbus's environment (`{ "env": NAME }` header
 *   values) and to set it for a program config starts (an `mcp/<id>` item's `env`), which could
 *   otherwise slip code into an allowed program (`NODE_OPTIONS`, `LD_PRELOAD`).
 * - An `mcp/<id>` item with `cwd` needs `*` among the `commands`: its working folder changes what an
 *   allowed program runs.
 */
export interface ConfigAllowlist {
  /** @default [] */
  readonly commands?: readonly string[];
  /** @default [] */
  readonly env?: readonly string[];
}

/** What one config item asks to do beyond calling tools. */
export interface ConfigPrivileges {
  /**
   * Programs it runs, each with its arguments, the variables it sets in the program's environment
   * (`NODE_OPTIONS` or `LD_PRELOAD` would make any allowed program run other code) and its working
   * folder, when given (it changes what relative paths, `.npmrc` and the like mean).
   */
  commands: { command: string; args: string[]; env: string[]; cwd: string | undefined }[];
  /** Environment variables of toolbus's own process it reads. */
  env: string[];
}

/** Splits a list variable: entries separated by commas or newlines, blanks dropped. */
function splitList(text: string | undefined): string[] {
  return (text ?? '')
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/**
 * The allowlist set by {@link ALLOW_COMMANDS_VARIABLE} and {@link ALLOW_ENV_VARIABLE} (comma-separated).
 *
 * @example
 * ```ts
 * configAllowlistFromEnv({ TOOLBUS_ALLOW_COMMANDS: 'npx', TOOLBUS_ALLOW_ENV: 'WEATHER_*' });
 * // { commands: ['npx'], env: ['WEATHER_*'] }
 * ```
 */
export function configAllowlistFromEnv(
  env: Readonly<Record<string, string | undefined>>,
): Required<ConfigAllowlist> {
  return { commands: splitList(env[ALLOW_COMMANDS_VARIABLE]), env: splitList(env[ALLOW_ENV_VARIABLE]) };
}

function isObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * What a config item of `type` asks to do beyond calling tools: an `mcp` item's `command` (with its
 * `args`, `env` and `cwd`), every `{ "env": NAME }` value of a `headers` object (the form the `http`
 * tool type reads), and an `mcp` item's `oauth.client-secret` and `oauth.private-key` (`{ "env": NAME }`).
 */
export function configPrivileges(type: string, value: JsonValue | undefined): ConfigPrivileges {
  const out: ConfigPrivileges = { commands: [], env: [] };
  if (!isObject(value)) return out;
  if (type === 'mcp' && typeof value['command'] === 'string') {
    // Every argument keeps its position (a non-string one is compared as its JSON, so it matches no
    // entry word): dropping it would shift the rest onto an allowed prefix.
    const args = Array.isArray(value['args'])
      ? value['args'].map((a) => (typeof a === 'string' ? a : JSON.stringify(a)))
      : [];
    const env = isObject(value['env']) ? Object.keys(value['env']) : [];
    const cwd = value['cwd'] === undefined ? undefined : String(value['cwd']);
    out.commands.push({ command: value['command'], args, env, cwd });
  }
  const headers = value['headers'];
  if (isObject(headers)) {
    for (const spec of Object.values(headers)) {
      if (isObject(spec) && typeof spec['env'] === 'string') out.env.push(spec['env']);
    }
  }
  // An mcp item's OAuth client secret or private key, named as { "env": NAME }.
  const oauth = value['oauth'];
  if (type === 'mcp' && isObject(oauth)) {
    for (const field of ['client-secret', 'private-key']) {
      const spec = oauth[field];
      if (isObject(spec) && typeof spec['env'] === 'string') out.env.push(spec['env']);
    }
  }
  return out;
}

/** The words of a `commands` entry: separated by whitespace, a double-quoted word may contain it. */
function wordsOf(entry: string): string[] {
  return [...entry.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? '');
}

function commandAllowed(entries: readonly string[], command: string, args: readonly string[]): boolean {
  return entries.some((entry) => {
    if (entry.trim() === '*') return true;
    const [program, ...prefix] = wordsOf(entry);
    return program === command && prefix.every((a, i) => args[i] === a);
  });
}

/** A config-given name for a message: control characters escaped, at most 200 characters. */
function shown(name: string): string {
  const short = name.length > 200 ? `${name.slice(0, 197)}...` : name;
  let out = '';
  for (const c of short) {
    const code = c.charCodeAt(0);
    out += code < 0x20 || code === 0x7f ? `\\u${code.toString(16).padStart(4, '0')}` : c;
  }
  return out;
}

/** The entry to suggest for a program: quoted when it contains whitespace, as {@link wordsOf} reads it. */
function entryFor(command: string): string {
  return /\s/.test(command) ? `'"${shown(command)}"'` : shown(command);
}

/**
 * Refuses a config item that runs a program or reads an environment variable the allowlist does not
 * list. The registry calls it on every item it builds a tool from, so no way of writing config (HTTP,
 * CLI, NATS KV) gets around it; `PUT` and `config put` call it too, to refuse such an item at once.
 *
 * @throws ToolbusError `not-allowed` naming the item, the program or variable, and the setting to change.
 */
export function assertConfigAllowed(
  allowlist: ConfigAllowlist,
  type: string,
  key: string,
  value: JsonValue | undefined,
): void {
  const { commands, env } = configPrivileges(type, value);
  const envAllowed = (name: string): boolean => (allowlist.env ?? []).some((p) => globMatches(p, name));
  for (const { command, args, env: childEnv, cwd } of commands) {
    if (commandAllowed(allowlist.commands ?? [], command, args)) {
      const trustsAll = (allowlist.commands ?? []).some((entry) => entry.trim() === '*');
      const variable = childEnv.find((name) => !envAllowed(name));
      if (variable !== undefined && !trustsAll) {
        throw new ToolbusError(
          'not-allowed',
          `config '${type}/${key}' sets the environment variable '${shown(variable)}' for the program ` +
            `'${shown(command)}', which is not allowed: a variable such as NODE_OPTIONS or LD_PRELOAD makes ` +
            `any program run other code, so config may set only variables listed in ${ALLOW_ENV_VARIABLE}. ` +
            `To allow it, set ${ALLOW_ENV_VARIABLE}=${shown(variable)} in the environment of 'toolbus up' ` +
            '(and of this command)',
        );
      }
      if (cwd !== undefined && !trustsAll) {
        throw new ToolbusError(
          'not-allowed',
          `config '${type}/${key}' sets 'cwd' for the program '${shown(command)}', which is not allowed: ` +
            'the working folder changes what an allowed program runs (its relative paths, .npmrc, ...). ' +
            'Give the program and its files as absolute paths instead, or trust config with every program ' +
            `(${ALLOW_COMMANDS_VARIABLE}=*)`,
        );
      }
      continue;
    }
    throw new ToolbusError(
      'not-allowed',
      `config '${type}/${key}' runs the program '${shown(command)}', which is not allowed: config may ` +
        `start only programs listed in ${ALLOW_COMMANDS_VARIABLE}. To allow it, set ` +
        `${ALLOW_COMMANDS_VARIABLE}=${entryFor(command)} in the environment of 'toolbus up' (and of this command)`,
    );
  }
  for (const name of env) {
    if (envAllowed(name)) continue;
    throw new ToolbusError(
      'not-allowed',
      `config '${type}/${key}' reads the environment variable '${shown(name)}', which is not allowed: ` +
        `config may read only variables listed in ${ALLOW_ENV_VARIABLE}. To allow it, set ` +
        `${ALLOW_ENV_VARIABLE}=${shown(name)} in the environment of 'toolbus up' (and of this command)`,
    );
  }
}
