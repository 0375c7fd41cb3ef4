/**
 * OpenTelemetry traces across real processes: a `nats-server`, `toolbus up --nats` with a scripted model,
 * `toolbus service` (the joke service, 2 replicas) in another process, and an OTLP/HTTP receiver started
 * here (JSON, `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`). One agent question through the gateway must give
 * one trace: gateway → agent client → agent service → invoke_agent → chat / execute_tool → tool-service
 * client → tool-service handler, each span the child of the one before it, the last from the service
 * process. Nothing of the arguments or results is recorded (no content opt-in).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer } from '../support/nats-server.js';
import { ROOT, interrupt, runCli, startCli } from '../support/cli.js';

/** Every wait of this test is bounded by this. */
const WAIT_MS = 30_000;

/** One span as the OTLP/JSON body carries it, with its process's `service.name`. */
interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's numbering: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, unknown>;
  status: { code?: number; message?: string };
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
  arrayValue?: { values?: OtlpValue[] };
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpBody {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: {
      spans?: (Omit<ReceivedSpan, 'service' | 'attributes'> & { attributes?: OtlpAttribute[] })[];
    }[];
  }[];
}

function valueOf(value: OtlpValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

function attributesOf(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]));
}

/** An OTLP/HTTP receiver for JSON traces on 127.0.0.1 and a free port. */
async function startOtlpReceiver(): Promise<{
  url: string;
  spans: ReceivedSpan[];
  requests: { path: string; contentType: string | undefined }[];
  close(): Promise<void>;
}> {
  const spans: ReceivedSpan[] = [];
  const requests: { path: string; contentType: string | undefined }[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ path: req.url ?? '', contentType: req.headers['content-type'] });
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpBody;
        for (const resourceSpans of body.resourceSpans ?? []) {
          const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name']);
          for (const scope of resourceSpans.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) {
              spans.push({ ...span, service, attributes: attributesOf(span.attributes) });
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch (error) {
        res.writeHead(400).end(String(error));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Rejects with `message` if `promise` has not settled within {@link WAIT_MS}. */
async function within<T>(promise: Promise<T>, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${message} (waited ${WAIT_MS} ms)`)), WAIT_MS);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `check` every 100 ms until it returns a value, for at most {@link WAIT_MS}. */
async function waitFor<T>(
  check: () => T | undefined | Promise<T | undefined>,
  message: () => string,
): Promise<T> {
  const until = Date.now() + WAIT_MS;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`${message()} (waited ${WAIT_MS} ms)`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const SERVER = 2;
const CLIENT = 3;
const INTERNAL = 1;

test('one agent question is one trace across the gateway, the agent, the model, the tool and the service process', async (t) => {
  const receiver = await startOtlpReceiver();
  const nats = await startNatsServer({ jetstream: true });
  const home = await mkdtemp(join(tmpdir(), 'toolbus-traces-'));
  const children: ChildProcess[] = [];
  t.after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await nats.stop();
    await receiver.close();
    await rm(home, { recursive: true, force: true });
  });
  const script = join(home, 'model.json');
  await writeFile(
    script,
    JSON.stringify([{ calls: [{ name: 'tell-joke', arguments: { topic: 'cats' } }] }, 'That was a cat pun.']),
  );
  const token = 'traces-test-token';
  const base: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TOOLBUS_HOME: home,
  };
  const otel: NodeJS.ProcessEnv = {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  };

  const up = await within(
    startCli(
      ['up', '--nats', nats.url, '--port', '0', '--no-examples'],
      {
        ...base,
        ...otel,
        OTEL_SERVICE_NAME: 'toolbus-up',
        TOOLBUS_TOKEN: token,
        TOOLBUS_SCRIPTED_MODEL: script,
      },
      /Press Ctrl-C to stop\./,
    ),
    "'toolbus up' did not start",
  );
  children.push(up.child);
  assert.match(up.output(), /toolbus: traces: OTLP http\/json to http:\/\/127\.0\.0\.1:\d+/);
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())?.[1];
  assert.ok(url, up.output());

  const service = await within(
    startCli(
      ['service', 'examples/joke-service/service.ts', '--nats', nats.url, '--replicas', '2'],
      { ...base, ...otel, OTEL_SERVICE_NAME: 'toolbus-joke-service' },
      /running \(2 replicas\)/,
    ),
    "'toolbus service' did not start",
  );
  children.push(service.child);

  for (const [item, file] of [
    ['tool-service/joke-service', 'joke-service.json'],
    ['tool/tell-joke', 'tell-joke.json'],
  ] as const) {
    const json = await readFile(join(ROOT, 'examples/joke-service', file), 'utf8');
    const put = await within(runCli(['config', 'put', item, '--nats', nats.url], base, json), 'config put');
    assert.equal(put.code, 0, put.stderr);
  }
  const headers = { authorization: `Bearer ${token}` };
  await waitFor(
    async () => {
      const response = await fetch(`${url}/api/v1/tools`, { headers });
      const body = (await response.json()) as { tools?: { name: string }[] };
      return body.tools?.some((tool) => tool.name === 'tell-joke') ? true : undefined;
    },
    () => `the registry in 'toolbus up' did not build tell-joke from the config put over NATS`,
  );

  // The caller's own trace context: the gateway's span must continue it.
  const callerTrace = 'c0ffee00c0ffee00c0ffee00c0ffee00';
  const callerSpan = 'abad1deaabad1dea';
  const response = await within(
    fetch(`${url}/api/v1/agent`, {
      method: 'POST',
      headers: {
        ...headers,
        'content-type': 'application/json',
        traceparent: `00-${callerTrace}-${callerSpan}-01`,
      },
      body: JSON.stringify({ question: 'A cat joke please', user: 'dave' }),
    }),
    'the agent did not answer',
  );
  assert.equal(response.status, 200, await response.clone().text());
  assert.deepEqual(await response.json(), { answer: 'That was a cat pun.' });

  const inTrace = (): ReceivedSpan[] => receiver.spans.filter((s) => s.traceId === callerTrace);
  const find = (name: string, kind: number, service?: string): ReceivedSpan | undefined =>
    inTrace().find(
      (s) => s.name === name && s.kind === kind && (service === undefined || s.service === service),
    );
  const describeSpans = (): string =>
    JSON.stringify(
      inTrace().map((s) => `${s.service}: ${s.name} (kind ${s.kind})`),
      null,
      1,
    ) + `\nrequests: ${JSON.stringify(receiver.requests.slice(0, 5))}\n${up.output()}\n${service.output()}`;
  // The service process exports on its own schedule: wait for its span, and for the gateway's (ended last).
  const handler = await waitFor(
    () => find('request:tg:joke/invoke', SERVER, 'toolbus-joke-service'),
    () => `no span of the service process in the trace; spans so far: ${describeSpans()}`,
  );
  const gateway = await waitFor(
    () => find('POST /api/v1/agent', SERVER, 'toolbus-up'),
    () => `no gateway span in the trace; spans so far: ${describeSpans()}`,
  );

  assert.ok(
    receiver.requests.every((r) => r.contentType === 'application/json'),
    'OTLP/HTTP JSON, as OTEL_EXPORTER_OTLP_PROTOCOL asks',
  );
  const need = (name: string, kind: number, service: string): ReceivedSpan => {
    const span = find(name, kind, service);
    assert.ok(span, `no '${name}' span (kind ${kind}) from ${service}; spans: ${describeSpans()}`);
    return span;
  };
  const agentClient = need('request:tg:agent/ask', CLIENT, 'toolbus-up');
  const agentServer = need('request:tg:agent/ask', SERVER, 'toolbus-up');
  const agent = need('invoke_agent assistant', INTERNAL, 'toolbus-up');
  const tool = need('execute_tool tell-joke', INTERNAL, 'toolbus-up');
  const toolClient = need('request:tg:joke/invoke', CLIENT, 'toolbus-up');
  const chats = inTrace().filter((s) => s.name === 'chat scripted' && s.kind === CLIENT);
  assert.equal(chats.length, 2, `two model calls; spans: ${describeSpans()}`);

  const chain: [string, ReceivedSpan, string][] = [
    ['gateway ← the caller', gateway, callerSpan],
    ['agent client ← gateway', agentClient, gateway.spanId],
    ['agent service ← agent client (over NATS)', agentServer, agentClient.spanId],
    ['invoke_agent ← agent service', agent, agentServer.spanId],
    ['first chat ← invoke_agent', chats[0]!, agent.spanId],
    ['second chat ← invoke_agent', chats[1]!, agent.spanId],
    ['execute_tool ← invoke_agent', tool, agent.spanId],
    ['tool-service client ← execute_tool', toolClient, tool.spanId],
    ['tool-service handler (service process) ← tool-service client (over NATS)', handler, toolClient.spanId],
  ];
  for (const [link, span, parent] of chain) assert.equal(span.parentSpanId, parent, link);

  assert.equal(gateway.attributes['http.request.method'], 'POST');
  assert.equal(gateway.attributes['url.path'], '/api/v1/agent');
  assert.equal(gateway.attributes['http.route'], '/api/v1/agent');
  assert.equal(gateway.attributes['http.response.status_code'], 200);
  assert.equal(tool.attributes['gen_ai.tool.name'], 'tell-joke');
  assert.equal(tool.attributes['gen_ai.tool.call.id'], 'call_1');
  assert.equal(toolClient.attributes['gen_ai.tool.name'], 'tell-joke');
  assert.equal(chats[0]!.attributes['gen_ai.request.model'], 'scripted');
  assert.equal(typeof chats[0]!.attributes['gen_ai.usage.input_tokens'], 'number');
  assert.equal(handler.attributes['toolbus.rpc.id'], toolClient.attributes['toolbus.rpc.id']);
  for (const span of inTrace()) {
    for (const key of ['gen_ai.tool.call.arguments', 'gen_ai.tool.call.result', 'gen_ai.input.messages']) {
      assert.equal(span.attributes[key], undefined, `${span.name} records no ${key} without the opt-in`);
    }
  }

  // A clean stop flushes and shuts the SDK down in both processes.
  assert.equal(await within(interrupt(service.child), "'toolbus service' did not stop"), 0, service.output());
  assert.equal(await within(interrupt(up.child), "'toolbus up' did not stop"), 0, up.output());
});
