/**
 * @module `connectNats`: opening a NATS connection with toolbus's defaults, shared by `NatsBus.connect` and
 * `NatsKvConfigStore.connect` so both report a missing server or an abort the same way.
 */
import { connect, type NatsConnection, type NodeConnectionOptions } from '@nats-io/transport-node';
import { ToolbusError, abortError, isToolbusError } from '../../errors/index.js';

/** Default delay between reconnect attempts (plus jitter). */
export const DEFAULT_NATS_RECONNECT_WAIT_MS = 1_000;
/** Default time to wait for the first connection. */
export const DEFAULT_NATS_CONNECT_TIMEOUT_MS = 5_000;

/** Options of {@link connectNats} (and of `NatsBus.connect` and `NatsKvConfigStore.connect`). */
export interface NatsConnectOptions {
  /** One or more server URLs, e.g. `nats://127.0.0.1:4222`. */
  servers: string | string[];
  /** The client name shown by the server's monitoring. @default 'toolbus' */
  name?: string;
  /** Reconnect after losing the connection. @default true */
  reconnect?: boolean;
  /** Reconnect attempts per server; -1 is unlimited. @default -1 */
  maxReconnectAttempts?: number;
  /** Delay between reconnect attempts to one server. @default DEFAULT_NATS_RECONNECT_WAIT_MS (1000) */
  reconnectWaitMs?: number;
  /** Time allowed for the first connection. @default DEFAULT_NATS_CONNECT_TIMEOUT_MS (5000) */
  connectTimeoutMs?: number;
  /** Further `@nats-io/transport-node` connection options (auth, TLS...), applied first. @default {} */
  connection?: NodeConnectionOptions;
  /** Aborts the connection attempt. @default none */
  signal?: AbortSignal;
}

/**
 * Opens a NATS connection with toolbus's defaults: reconnect forever, a bounded first attempt, an abort
 * signal honoured while connecting. Rejects with `unavailable` (no server answered), `cancelled` (the
 * signal), or `invalid-config` (no server given).
 */
export async function connectNats(options: NatsConnectOptions): Promise<NatsConnection> {
  const { signal } = options;
  if (signal?.aborted) throw connectAborted(signal, options.servers);
  const servers = options.servers;
  if ((Array.isArray(servers) && servers.length === 0) || servers === '') {
    throw new ToolbusError('invalid-config', `NATS servers must be given, e.g. 'nats://127.0.0.1:4222'`);
  }
  const pending = connect({
    ...options.connection,
    servers,
    name: options.name ?? 'toolbus',
    reconnect: options.reconnect ?? true,
    maxReconnectAttempts: options.maxReconnectAttempts ?? -1,
    reconnectTimeWait: options.reconnectWaitMs ?? DEFAULT_NATS_RECONNECT_WAIT_MS,
    timeout: options.connectTimeoutMs ?? DEFAULT_NATS_CONNECT_TIMEOUT_MS,
  });
  let onAbort: (() => void) | undefined;
  try {
    if (!signal) return await pending;
    return await Promise.race([
      pending,
      new Promise<never>((_, reject) => {
        onAbort = () => reject(connectAborted(signal, servers));
        signal.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
  } catch (error) {
    // A connection that opens after an abort is closed at once.
    void pending.then((nc) => nc.close()).catch(() => undefined);
    if (isToolbusError(error)) throw error;
    const err = error as Error;
    throw new ToolbusError(
      'unavailable',
      `cannot connect to NATS at ${JSON.stringify(servers)}: ${err.message}; expected a running nats-server`,
      { cause: err },
    );
  } finally {
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}

/** What an aborted connect rejects with: `timeout` for `AbortSignal.timeout`, else `cancelled`. */
function connectAborted(signal: AbortSignal, servers: string | string[]): ToolbusError {
  return abortError(signal, `connecting to NATS at ${JSON.stringify(servers)}`);
}
