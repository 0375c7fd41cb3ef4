/**
 * @module `connectNats`: opening a NATS connection with toolbus's defaults, shared by `NatsBus.connect`,
 * `NatsKvConfigStore.connect` and `JetStreamAuditLog.connect`, so all report a missing server, refused
 * credentials, a TLS failure or an abort the same way. The one place that builds nats.js's options.
 */
import { connect, type NatsConnection, type NodeConnectionOptions } from '@nats-io/transport-node';
import { ToolbusError, abortError, isToolbusError } from '../../errors/index.js';
import {
  authenticatorOf,
  clientCertificateFailure,
  parseServerUrls,
  probeServerInfo,
  redactServerUrl,
  securityFailure,
  tlsOptionsOf,
  type NatsAuth,
  type NatsTlsOptions,
  type SecurityAttempt,
} from './security.js';

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
  /**
   * How to authenticate. Credentials written in a server URL (`nats://user:password@host:4222`,
   * `nats://token@host:4222`) work too, but not both. @default none, or the URL's
   */
  auth?: NatsAuth;
  /**
   * Require TLS, with these certificates; a `tls://` URL requires it too. Without either, TLS is used
   * when the server requires it, trusting Node's bundled CAs. @default none
   */
  tls?: NatsTlsOptions;
  /** Further `@nats-io/transport-node` connection options, applied first (`auth`, `tls` win). @default {} */
  connection?: NodeConnectionOptions;
  /** Aborts the connection attempt. @default none */
  signal?: AbortSignal;
}

/**
 * How long a first connection may be pending before the server's INFO is read to explain it: a server
 * that verifies TLS clients drops one without a certificate after the handshake, which nats.js sees
 * only as its connect timeout.
 */
const PROBE_AFTER_MS = 1_000;

/**
 * Opens a NATS connection with toolbus's defaults: reconnect forever, a bounded first attempt, an abort
 * signal honoured while connecting. Rejects with `unavailable` (no server answered), `cancelled` (the
 * signal), `invalid-config` (no server given), `usage` (credentials given twice), or a
 * {@link NatsSecurityError} (`unauthorized`, `unavailable`, `invalid-config`) when the server refused
 * the credentials or TLS failed; no message carries a secret.
 *
 * @example
 * ```ts
 * const nc = await connectNats({ servers: 'tls://nats.example.com:4222', auth: { token }, tls: { ca } });
 * ```
 */
export async function connectNats(options: NatsConnectOptions): Promise<NatsConnection> {
  const { signal } = options;
  const given = typeof options.servers === 'string' ? [options.servers] : options.servers;
  if (signal?.aborted) throw connectAborted(signal, given.map(redactServerUrl).join(', '));
  if (given.length === 0 || given.some((url) => url.trim() === '')) {
    throw new ToolbusError('invalid-config', `NATS servers must be given, e.g. 'nats://127.0.0.1:4222'`);
  }
  const target = parseServerUrls(given);
  if (options.auth && target.auth) {
    throw new ToolbusError(
      'usage',
      `NATS credentials were given twice, in the server URL and as auth options: give them once`,
    );
  }
  const { label } = target;
  const auth = options.auth ?? target.auth;
  const tls = options.tls ?? (target.tls ? {} : undefined);
  const attempt: SecurityAttempt = {
    label,
    auth: auth !== undefined,
    tlsRequiredBy: options.tls ? 'the TLS options' : target.tls ? 'a tls:// URL' : undefined,
    clientCertificate: tls?.cert !== undefined,
  };
  const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_NATS_CONNECT_TIMEOUT_MS;
  const pending = connect({
    // A stack trace captured for every request (JetStream publishes, KV reads and writes, acks) costs a
    // good part of a durable call's CPU; toolbus turns every request error into a ToolbusError naming
    // what failed instead. `connection: { noAsyncTraces: false }` brings the traces back.
    noAsyncTraces: true,
    ...options.connection,
    ...(auth ? { authenticator: authenticatorOf(auth, label) } : {}),
    ...(tls ? { tls: tlsOptionsOf(tls, label) } : {}),
    servers: target.servers,
    name: options.name ?? 'toolbus',
    reconnect: options.reconnect ?? true,
    maxReconnectAttempts: options.maxReconnectAttempts ?? -1,
    reconnectTimeWait: options.reconnectWaitMs ?? DEFAULT_NATS_RECONNECT_WAIT_MS,
    timeout: connectTimeoutMs,
  });
  let onAbort: (() => void) | undefined;
  let probe: NodeJS.Timeout | undefined;
  try {
    const waits: Promise<NatsConnection>[] = [pending];
    if (signal) {
      waits.push(
        new Promise<never>((_, reject) => {
          onAbort = () => reject(connectAborted(signal, label));
          signal.addEventListener('abort', onAbort, { once: true });
        }),
      );
    }
    if (!attempt.clientCertificate) {
      // Without a certificate such a server can never accept this client: say so now, not at the timeout.
      waits.push(
        new Promise<never>((_, reject) => {
          probe = setTimeout(
            () =>
              void probeServerInfo(target.servers[0]!, PROBE_AFTER_MS).then((info) => {
                if (info?.tls_verify) reject(clientCertificateFailure(attempt));
              }),
            Math.min(PROBE_AFTER_MS, connectTimeoutMs / 2),
          );
        }),
      );
    }
    return await Promise.race(waits);
  } catch (error) {
    // A connection that opens after an abort is closed at once.
    void pending.then((nc) => nc.close()).catch(() => undefined);
    if (isToolbusError(error)) throw error;
    const refused = securityFailure(error, attempt);
    if (refused) throw refused;
    if ((error as Error).name === 'TimeoutError' && attempt.clientCertificate) {
      // With a certificate, only a failed attempt is explained: a slow but good one is not cut short.
      const info = await probeServerInfo(target.servers[0]!, PROBE_AFTER_MS);
      if (info?.tls_verify) throw clientCertificateFailure(attempt);
    }
    const err = error as Error;
    throw new ToolbusError(
      'unavailable',
      `cannot connect to NATS at ${label}: ${err.message}; expected a running nats-server`,
      { cause: err },
    );
  } finally {
    clearTimeout(probe);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}

/** What an aborted connect rejects with: `timeout` for `AbortSignal.timeout`, else `cancelled`. */
function connectAborted(signal: AbortSignal, label: string): ToolbusError {
  return abortError(signal, `connecting to NATS at ${label}`);
}
