/**
 * @module Launches a real `nats-server` (Debian's package) for tests and benchmarks: 127.0.0.1, a free
 * port, JetStream in a temporary folder. Without the binary it fails with the install command; the NATS
 * tests are never skipped.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

/** Options of {@link startNatsServer}. */
export interface NatsServerOptions {
  /** Enable JetStream (`-js`) with its store in a temporary folder. @default true */
  jetstream?: boolean;
  /**
   * The text of a configuration file (`-c`), e.g. `authorization { users: [...] }`; the listen address,
   * port and JetStream store given on the command line win over it. @default none
   */
  config?: string;
  /** Require this user and `password` (`--user`, `--pass`). @default none */
  user?: string;
  /** The password of `user`. @default none */
  password?: string;
  /** Require this token (`--auth`). @default none */
  token?: string;
  /** Serve TLS with these PEM files (`--tls…`); `verify` requires client certificates. @default none */
  tls?: { cert: string; key: string; ca?: string; verify?: boolean };
  /** Variables for the server's environment, e.g. for `$NAME` references in `config`. @default none */
  env?: NodeJS.ProcessEnv;
}

/** A running `nats-server`. */
export interface NatsServer {
  /** `nats://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** The process id of the current server process. */
  readonly pid: number;
  /** The JetStream store folder (kept across {@link restart}). */
  readonly storeDir: string;
  /** Stops the server and removes its store folder. Idempotent. */
  stop(): Promise<void>;
  /**
   * Stops the server (SIGKILL with `kill: true`, else SIGTERM) and starts it again on the same port and
   * store folder, so clients reconnect and JetStream data survives. `downMs` keeps it down that long
   * first (an outage clients notice, rather than a blip they may reconnect through).
   */
  restart(options?: { kill?: boolean; downMs?: number }): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Folders searched after PATH: Debian installs the server in /usr/sbin, often not on a user's PATH. */
export const NATS_SERVER_DIRS: readonly string[] = ['/usr/sbin', '/usr/local/bin', '/usr/bin'];

/**
 * Where the binary is: `NATS_SERVER` env, then PATH, then {@link NATS_SERVER_DIRS}.
 * @throws Error with the install command when it is nowhere.
 */
export function findNatsServer(
  env: NodeJS.ProcessEnv = process.env,
  extraDirs: readonly string[] = NATS_SERVER_DIRS,
): string {
  const fromEnv = env.NATS_SERVER;
  if (fromEnv && existsSync(fromEnv)) return fromEnv;
  const dirs = [...(env.PATH ?? '').split(delimiter), ...extraDirs];
  for (const dir of dirs) {
    if (!dir) continue;
    const candidate = join(dir, 'nats-server');
    if (existsSync(candidate)) return candidate;
  }
  throw new Error(
    'nats-server was not found (looked in $NATS_SERVER, $PATH and /usr/sbin). The NATS tests need the real ' +
      'server: install it with `apt-get install -y nats-server` (Debian/Ubuntu), then run the tests again.',
  );
}

const READY = /Listening for client connections on [^\s:]+:(\d+)/;

async function launch(
  binary: string,
  port: number,
  storeDir: string,
  jetstream: boolean,
  extra: { args: string[]; env?: NodeJS.ProcessEnv | undefined } = { args: [] },
): Promise<{ child: ChildProcess; port: number }> {
  const args = [...extra.args, '-a', '127.0.0.1', '-p', String(port)];
  if (jetstream) args.push('-js', '-sd', storeDir);
  const env = extra.env ? { ...process.env, ...extra.env } : process.env;
  const child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'], env });
  return await new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`nats-server did not become ready within 10 s; its log:\n${log.slice(-2000)}`));
    }, 10_000);
    const onData = (chunk: Buffer): void => {
      log += chunk.toString('utf8');
      const match = READY.exec(log);
      // JetStream finishes starting before the client listener opens, so this line means ready.
      if (match) {
        clearTimeout(timer);
        child.stderr?.off('data', onData);
        child.stderr?.resume();
        resolve({ child, port: Number(match[1]) });
      }
    };
    child.stderr?.on('data', onData);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot start nats-server '${binary}': ${error.message}`, { cause: error }));
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(
        new Error(`nats-server exited early (code ${code}, signal ${signal}); its log:\n${log.slice(-2000)}`),
      );
    });
  });
}

async function terminate(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Starts `nats-server` on 127.0.0.1 and a free port (`-p -1`), with JetStream (`-js -sd <tmpdir>`).
 *
 * @example
 * ```ts
 * const server = await startNatsServer({ jetstream: true });
 * t.after(() => server.stop());
 * const bus = await NatsBus.connect({ servers: server.url });
 * ```
 */
export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServer> {
  const binary = findNatsServer();
  const jetstream = options.jetstream ?? true;
  const storeDir = await mkdtemp(join(tmpdir(), 'toolbus-nats-'));
  let current: ChildProcess;
  let port: number;
  const extra = { args: [] as string[], env: options.env };
  try {
    if (options.config !== undefined) {
      const file = join(storeDir, 'nats-server.conf');
      await writeFile(file, options.config);
      extra.args.push('-c', file);
    }
    if (options.user !== undefined) extra.args.push('--user', options.user);
    if (options.password !== undefined) extra.args.push('--pass', options.password);
    if (options.token !== undefined) extra.args.push('--auth', options.token);
    if (options.tls) {
      extra.args.push('--tls', '--tlscert', options.tls.cert, '--tlskey', options.tls.key);
      if (options.tls.ca !== undefined) extra.args.push('--tlscacert', options.tls.ca);
      if (options.tls.verify) extra.args.push('--tlsverify');
    }
    ({ child: current, port } = await launch(binary, -1, storeDir, jetstream, extra));
  } catch (error) {
    await rm(storeDir, { recursive: true, force: true });
    throw error;
  }
  let stopped = false;
  const server: NatsServer = {
    url: `nats://127.0.0.1:${port}`,
    port,
    get pid() {
      return current.pid ?? -1;
    },
    storeDir,
    async stop() {
      if (stopped) return;
      stopped = true;
      await terminate(current, 'SIGTERM');
      await rm(storeDir, { recursive: true, force: true });
    },
    async restart(restartOptions = {}) {
      if (stopped) throw new Error('nats-server was stopped; cannot restart it');
      await terminate(current, restartOptions.kill ? 'SIGKILL' : 'SIGTERM');
      if (restartOptions.downMs) await new Promise((r) => setTimeout(r, restartOptions.downMs));
      // The port can linger for a moment after a kill; retry briefly.
      let lastError: unknown;
      for (let attempt = 0; attempt < 20; attempt++) {
        try {
          ({ child: current } = await launch(binary, port, storeDir, jetstream, extra));
          return;
        } catch (error) {
          lastError = error;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      throw lastError;
    },
    [Symbol.asyncDispose]() {
      return server.stop();
    },
  };
  return server;
}
