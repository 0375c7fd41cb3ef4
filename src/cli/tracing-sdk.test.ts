/**
 * `startTracingSdk`: started only when an OTLP endpoint is set, the service named unless the environment
 * names it, a missing SDK told in one line with the install command, and a shutdown that never hangs a
 * stop. The SDK itself is a stand-in here (the real one runs in test/integration/traces-otlp.test.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import type { CliIO } from './command.js';
import { startTracingSdk, type TracingSdkModule } from './tracing-sdk.js';

function ioWith(env: NodeJS.ProcessEnv): { io: CliIO; stderr: () => string } {
  const stderr = new PassThrough();
  let text = '';
  stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const io: CliIO = {
    stdin: new PassThrough(),
    stdout: new PassThrough(),
    stderr,
    env,
    cwd: process.cwd(),
    signal: new AbortController().signal,
  };
  return { io, stderr: () => text };
}

/** A stand-in for `@opentelemetry/sdk-node` that records what it was given. */
function fakeSdk(shutdown: () => Promise<void> = () => Promise.resolve()): {
  module: TracingSdkModule;
  configs: unknown[];
  started: () => number;
} {
  const configs: unknown[] = [];
  let started = 0;
  class NodeSDK {
    constructor(config?: unknown) {
      configs.push(config);
    }
    start(): void {
      started++;
    }
    shutdown(): Promise<void> {
      return shutdown();
    }
  }
  return { module: { NodeSDK } as TracingSdkModule, configs, started: () => started };
}

test('without an OTLP endpoint nothing is loaded and tracing stays off', async () => {
  let loaded = false;
  const { io } = ioWith({ OTEL_SERVICE_NAME: 'x' });
  const sdk = await startTracingSdk(io, 'toolbus', async () => {
    loaded = true;
    return fakeSdk().module;
  });
  assert.equal(sdk, undefined);
  assert.equal(loaded, false);
});

test('an endpoint starts the SDK for traces only, named unless the environment names the service', async () => {
  const fake = fakeSdk();
  const { io } = ioWith({
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://user:secret@otel.example:4318/v1/traces?k=v',
  });
  const sdk = await startTracingSdk(io, 'toolbus-service', async () => fake.module);
  assert.ok(sdk);
  assert.equal(fake.started(), 1);
  assert.deepEqual(fake.configs[0], {
    serviceName: 'toolbus-service',
    metricReaders: [],
    logRecordProcessors: [],
  });
  // Credentials and the query stay out of the start-up line.
  assert.equal(sdk.description, 'OTLP http/protobuf to https://otel.example:4318/v1/traces');
  await sdk.shutdown();

  for (const env of [
    { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SERVICE_NAME: 'mine' },
    {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318',
      OTEL_RESOURCE_ATTRIBUTES: 'team=a, service.name=mine',
    },
  ]) {
    const named = fakeSdk();
    await startTracingSdk(ioWith(env).io, 'toolbus', async () => named.module);
    assert.deepEqual(named.configs[0], { metricReaders: [], logRecordProcessors: [] }, JSON.stringify(env));
  }
});

test('a missing SDK fails with one line naming the package to install', async () => {
  const { io } = ioWith({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' });
  const missing = Object.assign(
    new Error("Cannot find package '@opentelemetry/sdk-node' imported from /app/dist/cli/tracing-sdk.js"),
    { code: 'ERR_MODULE_NOT_FOUND' },
  );
  await assert.rejects(
    startTracingSdk(io, 'toolbus', () => Promise.reject(missing)),
    (error: Error & { code?: string }) => {
      assert.equal(error.code, 'unsupported');
      assert.match(error.message, /npm install @opentelemetry\/sdk-node@0\.301\.0/);
      assert.doesNotMatch(error.message, /\n/);
      assert.equal(error.cause, missing);
      return true;
    },
  );
});

test('shutdown never rejects, and is idempotent', async () => {
  let calls = 0;
  const fake = fakeSdk(() => {
    calls++;
    return Promise.reject(new Error('collector refused'));
  });
  const { io, stderr } = ioWith({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' });
  const sdk = await startTracingSdk(io, 'toolbus', async () => fake.module);
  await sdk!.shutdown();
  await sdk!.shutdown();
  assert.equal(calls, 1);
  assert.match(stderr(), /stopping the OpenTelemetry SDK failed: Error: collector refused/);
});
