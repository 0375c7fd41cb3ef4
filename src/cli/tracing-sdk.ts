/**
 * @module Starts the OpenTelemetry Node SDK for `toolbus up` and `toolbus service` when the standard
 * variables ask for traces: `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`. The SDK
 * (`@opentelemetry/sdk-node`) is an optional peer, imported only then; every other `OTEL_*` variable
 * (`OTEL_EXPORTER_OTLP_PROTOCOL` — `http/protobuf`, `http/json` or `grpc` —, `OTEL_SERVICE_NAME`,
 * `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`, `OTEL_PROPAGATORS`, …) is the SDK's to
 * read, from the process environment.
 *
 * Traces only: toolbus's metrics are Prometheus (`/metrics`) and its logs pino, so the SDK starts no
 * metric reader and no log exporter of its own.
 */
import type { NodeSDK } from '@opentelemetry/sdk-node';
import { ToolbusError } from '../errors/index.js';
import type { CliIO } from './command.js';

/** The packages `toolbus up` and `toolbus service` need to export traces, pinned as the project tests them. */
export const TRACING_SDK_PACKAGES = ['@opentelemetry/sdk-node@0.301.0'] as const;

/** How long stopping waits for the last spans to be exported (an unreachable collector must not hang a stop). */
export const TRACING_SHUTDOWN_TIMEOUT_MS = 5_000;

/** A started SDK. */
export interface TracingSdk {
  /** One line for the start-up output, e.g. `OTLP http/json to http://collector:4318`. */
  readonly description: string;
  /** Exports what is buffered and stops; never rejects (a failure is written to stderr). Idempotent. */
  shutdown(): Promise<void>;
}

/** What this module needs of `@opentelemetry/sdk-node`: its `NodeSDK` class. */
export interface TracingSdkModule {
  NodeSDK: new (...args: ConstructorParameters<typeof NodeSDK>) => Pick<NodeSDK, 'start' | 'shutdown'>;
}

/** Loads the optional peer, only when traces are asked for. */
const loadSdk = (): Promise<TracingSdkModule> => import('@opentelemetry/sdk-node');

/** True when the environment asks for OTLP traces. */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT);
}

/**
 * Starts the SDK when {@link tracingRequested}, else resolves undefined (tracing stays a no-op). The
 * service is `defaultServiceName` unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` names one.
 *
 * Rejects with `unsupported` (one line naming the package to install) when the SDK is not installed.
 * `load` imports the SDK (tests give their own).
 */
export async function startTracingSdk(
  io: CliIO,
  defaultServiceName: string,
  load: () => Promise<TracingSdkModule> = loadSdk,
): Promise<TracingSdk | undefined> {
  const env = io.env;
  if (!tracingRequested(env)) return undefined;
  let sdkModule: TracingSdkModule;
  try {
    sdkModule = await load();
  } catch (error) {
    const e = error as { code?: string; message?: string };
    if (e.code === 'ERR_MODULE_NOT_FOUND' && e.message?.includes("'@opentelemetry/sdk-node'")) {
      throw new ToolbusError(
        'unsupported',
        'OTEL_EXPORTER_OTLP_ENDPOINT is set, but the OpenTelemetry SDK is not installed: ' +
          `npm install ${TRACING_SDK_PACKAGES.join(' ')} (or unset the variable to run without traces)`,
        { cause: error },
      );
    }
    throw error;
  }
  const named =
    Boolean(env.OTEL_SERVICE_NAME) || /(?:^|,)\s*service\.name\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '');
  const sdk = new sdkModule.NodeSDK({
    // `serviceName` overrides the environment's, so it is given only when the environment names none.
    ...(named ? {} : { serviceName: defaultServiceName }),
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  let stopping: Promise<void> | undefined;
  return {
    description: describe(env),
    shutdown() {
      stopping ??= (async () => {
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<'timeout'>((resolve) => {
          timer = setTimeout(() => resolve('timeout'), TRACING_SHUTDOWN_TIMEOUT_MS);
          timer.unref();
        });
        try {
          const outcome = await Promise.race([sdk.shutdown().then(() => 'done' as const), timedOut]);
          if (outcome === 'timeout') {
            io.stderr.write(
              `toolbus: traces: the last spans were not exported within ${TRACING_SHUTDOWN_TIMEOUT_MS} ms; stopping anyway\n`,
            );
          }
        } catch (error) {
          io.stderr.write(`toolbus: traces: stopping the OpenTelemetry SDK failed: ${String(error)}\n`);
        } finally {
          clearTimeout(timer);
        }
      })();
      return stopping;
    },
  };
}

/** Where spans go, for the start-up output: the protocol and the traces endpoint. */
function describe(env: NodeJS.ProcessEnv): string {
  const protocol =
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf';
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT || '';
  return `OTLP ${protocol} to ${redactUrl(endpoint)}`;
}

/** A URL without its credentials or query (either may hold a token). */
function redactUrl(text: string): string {
  try {
    const url = new URL(text);
    return `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`;
  } catch {
    return '(an endpoint that is not a URL)';
  }
}
