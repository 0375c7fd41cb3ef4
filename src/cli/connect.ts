/**
 * @module Opening the bus and the config store a CLI command works on, from `--nats` / `--store` and the
 * environment. The only place that picks a backend; leaves are loaded lazily so `toolbus config` on a
 * SQLite file never loads the NATS client.
 */
import { basename, dirname, extname, isAbsolute, join, resolve } from 'node:path';
import { importLeaf } from './import-leaf.js';
import type { CallStore, MessageBus } from '../bus/index.js';
import type { NatsBusStatus } from '../bus/nats/index.js';
import { MemoryBus } from '../bus/index.js';
import type { ConfigStore } from '../config/index.js';
import { ExitCode, type CliIO } from './command.js';
import { connectSecurely, displayNatsUrl, type NatsSecurity } from './nats-security.js';

/** The `--nats` / `--store` flags, and the NATS security flags. */
export interface ConnectFlags {
  /** A NATS server URL; the bus and the config then live on NATS. @default $TOOLBUS_NATS */
  nats?: string | undefined;
  /** Credentials and TLS for NATS. @default the `TOOLBUS_NATS_*` variables */
  natsSecurity?: NatsSecurity | undefined;
  /** A SQLite config file. @default `<toolbusHome>/config.db` */
  store?: string | undefined;
}

/** The toolbus home directory: `$TOOLBUS_HOME`, else `./.toolbus` under the working directory. */
export function toolbusHome(io: Pick<CliIO, 'env' | 'cwd'>): string {
  const home = io.env.TOOLBUS_HOME;
  if (home) return isAbsolute(home) ? home : resolve(io.cwd, home);
  return join(io.cwd, '.toolbus');
}

/** The NATS URL to use: `--nats`, else `$TOOLBUS_NATS` unless `--store` was given. */
function natsUrl(flags: ConnectFlags, io: Pick<CliIO, 'env'>): string | undefined {
  if (flags.nats) return flags.nats;
  if (flags.store) return undefined;
  return io.env.TOOLBUS_NATS || undefined;
}

/** What a reading command says of the items it would show, for {@link answerMissingStoreFile}. */
export interface MissingStoreWords {
  /** The command, e.g. `toolbus config`. */
  command: string;
  /** The items, e.g. `config items`, `principals`. */
  items: string;
  /** How to add one, e.g. `toolbus config put TYPE/KEY < item.json`. */
  add: string;
  /** The command that creates the file, e.g. `toolbus config put`. */
  creates: string;
}

/**
 * Answers a get, list or remove on a SQLite file that does not exist yet, without creating it: an
 * explicit `--store` path is probably a typo (exit 1); otherwise `list` shows nothing (exit 0) and the
 * others say there are no items yet (exit 1).
 */
export function answerMissingStoreFile(
  io: Pick<CliIO, 'stdout' | 'stderr'>,
  words: MissingStoreWords,
  at: { path: string; action: string; explicit: boolean; json: boolean | undefined },
): number {
  const { path } = at;
  if (at.explicit) {
    io.stderr.write(
      `${words.command}: there is no config file at '${path}'; check the --store path ` +
        `(${words.creates} creates the file)\n`,
    );
    return ExitCode.Error;
  }
  if (at.action === 'list') {
    if (at.json) io.stdout.write('[]\n');
    else io.stderr.write(`no ${words.items} (no config file at '${path}' yet); add one with ${words.add}\n`);
    return ExitCode.Ok;
  }
  io.stderr.write(
    `${words.command}: there are no ${words.items} yet (no config file at '${path}'); add one with ${words.add}\n`,
  );
  return ExitCode.Error;
}

/** The SQLite file a command uses: `--store PATH` (relative to the working directory) or the default. */
export function configStorePath(flags: ConnectFlags, io: Pick<CliIO, 'env' | 'cwd'>): string {
  return flags.store ? resolve(io.cwd, flags.store) : join(toolbusHome(io), 'config.db');
}

/** One line saying where config lives, e.g. `sqlite /home/me/.toolbus/config.db`. */
export function describeStore(flags: ConnectFlags, io: Pick<CliIO, 'env' | 'cwd'>): string {
  const nats = natsUrl(flags, io);
  return nats ? `nats-kv ${displayNatsUrl(nats)}` : `sqlite ${configStorePath(flags, io)}`;
}

/**
 * Opens the config store the flags name: NATS JetStream key-value with `--nats URL` (or
 * `$TOOLBUS_NATS`), else the SQLite file of `--store PATH`, else `$TOOLBUS_HOME/config.db` or
 * `./.toolbus/config.db`.
 *
 * Rejects with `store-error` when the file cannot be opened (the message says what to do), with
 * `unsupported` when the leaf's optional package is not installed (the message has the install command),
 * or as {@link connectSecurely} does on NATS (`usage` for an unreadable security file, `unauthorized`…).
 */
export async function openConfigStore(flags: ConnectFlags, io: CliIO): Promise<ConfigStore> {
  const nats = natsUrl(flags, io);
  if (nats) {
    const { NatsKvConfigStore } = await importLeaf('nats', () => import('../bus/nats/index.js'));
    return connectSecurely(flags.natsSecurity, nats, io, (security) =>
      NatsKvConfigStore.connect({ servers: nats, signal: io.signal, ...security }),
    );
  }
  const { SqliteConfigStore } = await importLeaf('sqlite', () => import('../config/sqlite/index.js'));
  return new SqliteConfigStore({ path: configStorePath(flags, io) });
}

/**
 * Where an embedded `toolbus up` keeps durable call states and async results: beside the config file,
 * `config.db` → `config.calls.db`.
 */
export function callStorePath(flags: ConnectFlags, io: Pick<CliIO, 'env' | 'cwd'>): string {
  const config = configStorePath(flags, io);
  const ext = extname(config);
  return join(dirname(config), `${basename(config, ext)}.calls${ext || '.db'}`);
}

/**
 * The memory bus of an embedded `toolbus up`, whose durable calls keep their states in the SQLite file
 * {@link callStorePath} names (so an async call's result is there after a restart). Closing the bus
 * leaves the store open: close it too.
 */
export async function openEmbeddedBus(
  flags: ConnectFlags,
  io: CliIO,
): Promise<{ bus: MessageBus; callStore: CallStore }> {
  const { SqliteCallStore } = await importLeaf('sqlite', () => import('../config/sqlite/index.js'));
  const callStore = new SqliteCallStore({ path: callStorePath(flags, io) });
  return { bus: new MemoryBus({ callStore }), callStore };
}

/** The NATS URL {@link openBus} connects to: `--nats`, else `$TOOLBUS_NATS`; undefined for a memory bus. */
export function busNatsUrl(flags: ConnectFlags, io: Pick<CliIO, 'env'>): string | undefined {
  return flags.nats ?? (io.env.TOOLBUS_NATS || undefined);
}

/**
 * Opens the bus the flags name: a `NatsBus` with `--nats URL` (or `$TOOLBUS_NATS`), else a `MemoryBus`.
 * `onStatus` hears a NATS bus's disconnects and reconnects (e.g. to log them).
 */
export async function openBus(
  flags: ConnectFlags,
  io: CliIO,
  onStatus?: (status: NatsBusStatus) => void,
): Promise<MessageBus> {
  const nats = busNatsUrl(flags, io);
  if (!nats) return new MemoryBus();
  const { NatsBus } = await importLeaf('nats', () => import('../bus/nats/index.js'));
  // Ctrl-C while the server does not answer stops the wait at once, not after the connect timeout.
  return connectSecurely(flags.natsSecurity, nats, io, (security) =>
    NatsBus.connect({
      servers: nats,
      signal: io.signal,
      ...security,
      ...(onStatus ? { hooks: { onStatus } } : {}),
    }),
  );
}
