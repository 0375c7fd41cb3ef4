/**
 * @module Argument parsing for CLI commands on `node:util` `parseArgs`, turning its errors into
 * `UsageError`s (exit code 2).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { didYouMean } from '../errors/index.js';
import { UsageError } from './command.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** Parses `argv` against `options`; unknown flags and missing values become a `UsageError`. */
export function parseCommandArgs<O extends Options>(
  argv: string[],
  options: O,
): {
  values: ReturnType<typeof parseArgs<{ options: O; allowPositionals: true; args: string[] }>>['values'];
  positionals: string[];
} {
  try {
    const parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
    return { values: parsed.values, positionals: parsed.positionals };
  } catch (error) {
    const message = (error as Error).message.replace(/\. To specify a positional argument.*$/s, '');
    // parseArgs says "Unknown option '--nat'": add the likely flag.
    const unknown = /^Unknown option '(-{1,2})([^']+)'/.exec(message);
    const hint = unknown
      ? didYouMean(unknown[2]!, Object.keys(options)).replace(/'([^']+)'\?\)$/, "'--$1'?)")
      : '';
    throw new UsageError(hint ? message.replace(/^(Unknown option '[^']+')/, `$1${hint}`) : message);
  }
}

/**
 * A port flag's value: a whole number from 0 to 65535 (0 picks a free port).
 * @throws UsageError naming the flag otherwise.
 */
export function parsePortFlag(flag: string, text: string): number {
  const port = Number(text);
  if (text.trim() === '' || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`${flag} must be a number from 0 to 65535, got '${text}'`);
  }
  return port;
}

/** The flags every command that talks to a running `toolbus up` shares. */
export const GATEWAY_FLAGS = {
  url: { type: 'string' },
  token: { type: 'string' },
} as const;

/** The flags every command that talks to a bus or a store directly shares. */
export const CONNECTION_FLAGS = {
  nats: { type: 'string' },
  store: { type: 'string' },
} as const;

/** Help text lines for {@link GATEWAY_FLAGS}. */
export const GATEWAY_FLAGS_HELP = `  --url URL          the running 'toolbus up' to talk to
                     (default: $TOOLBUS_URL or http://127.0.0.1:8888)
  --token TOKEN      bearer token (default: $TOOLBUS_TOKEN, else for a local gateway the token
                     'toolbus up' wrote to $TOOLBUS_HOME/token, ./.toolbus/token by default)`;

/** Help text lines for {@link CONNECTION_FLAGS}. */
export const CONNECTION_FLAGS_HELP = `  --nats URL         talk to the bus and config on a NATS server instead (e.g. nats://127.0.0.1:4222)
  --store PATH       use this SQLite config file directly
                     (default: $TOOLBUS_HOME/config.db or ./.toolbus/config.db)`;
