/**
 * The metrics as an operator sees them: a real Prometheus scrapes `toolbus up --metrics-port` and
 * `toolbus service --metrics-port` (both on a real nats-server), and its query API shows the toolbus_
 * series with the labels and values of the calls made through `toolbus call` and the HTTP API.
 * Never skipped: without the prometheus binary the test fails with the install command.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { startNatsServer } from '../support/nats-server.js';
import { interrupt, runCli, startCli } from '../support/cli.js';

/** Every wait below gives up after this long, saying what it waited for. */
const WAIT_MS = 30_000;

// Announces its own tool, so it needs no config items.
const SHOUT_SERVICE = `import { DynamicToolService, type MessageBus } from 'toolbus';

export default (bus: MessageBus) =>
  new DynamicToolService({
    bus,
    id: 'shout',
    topic: 'shout',
    announce: {
      tools: [{ name: 'shout', description: 'Shout', arguments: [{ name: 'text', type: 'string', description: 'What' }] }],
    },
    async invoke(_user, _config, args) {
      return String(args.text).toUpperCase();
    },
  });
`;

/** The prometheus binary: `$PROMETHEUS`, then PATH, then the Debian package's folders. */
function findPrometheus(): string {
  const fromEnv = process.env.PROMETHEUS;
  if (fromEnv && existsSync(fromEnv)) return fromEnv;
  for (const dir of [...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/usr/local/bin']) {
    if (dir && existsSync(join(dir, 'prometheus'))) return join(dir, 'prometheus');
  }
  throw new Error(
    'prometheus was not found (looked in $PROMETHEUS, $PATH, /usr/bin and /usr/local/bin). This test needs the ' +
      'real server: install it with `apt-get install -y prometheus` (Debian/Ubuntu; .ci/run does), then run it again.',
  );
}

/** A port that was free a moment ago (Prometheus takes its listen address as a flag, not port 0). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Polls `check` until it returns a value, at most WAIT_MS; the failure names `what` and the last state. */
async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined>,
  state: () => string,
): Promise<T> {
  const until = Date.now() + WAIT_MS;
  let lastError = '';
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = (error as Error).message;
    }
    if (Date.now() > until) {
      throw new Error(
        `${what}: not within ${WAIT_MS} ms${lastError ? ` (last error: ${lastError})` : ''}\n${state()}`,
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

/** Stops a child: SIGTERM, then SIGKILL if it has not exited within 5 s. */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

test('Prometheus scrapes toolbus up and toolbus service: the toolbus_ series with their labels and values', async (t) => {
  const prometheusBinary = findPrometheus();
  const nats = await startNatsServer({ jetstream: true });
  const home = await mkdtemp(join(tmpdir(), 'toolbus-prometheus-'));
  const cliChildren: ChildProcess[] = [];
  const servers: ChildProcess[] = [];
  t.after(async () => {
    for (const server of servers) await stop(server);
    for (const child of cliChildren.reverse()) {
      if (child.exitCode === null) await interrupt(child);
    }
    await nats.stop();
    await rm(home, { recursive: true, force: true });
  });
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home };
  const module = join(home, 'shout-service.ts');
  await writeFile(module, SHOUT_SERVICE);
  await writeFile(join(home, 'package.json'), '{"type":"module"}');

  const service = await startCli(
    ['service', module, '--nats', nats.url, '--metrics-port', '0'],
    env,
    /running \(1 replica\)/,
  );
  cliChildren.push(service.child);
  const serviceMetrics = /metrics at (http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec(service.output())?.[1];
  assert.ok(serviceMetrics, `no metrics URL in the service's output:\n${service.output()}`);

  const up = await startCli(
    ['up', '--nats', nats.url, '--port', '0', '--metrics-port', '0'],
    env,
    /Press Ctrl-C to stop\./,
  );
  cliChildren.push(up.child);
  const gateway = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())?.[1];
  const upMetrics = /(http:\/\/127\.0\.0\.1:\d+)\/metrics \(no token/.exec(up.output())?.[1];
  assert.ok(gateway && upMetrics, `no gateway or metrics URL in the banner:\n${up.output()}`);

  // Tool calls: two jokes (the in-process example service), one shout (the other process, once its
  // announcement is in), and one with bad arguments through the HTTP API.
  for (let i = 0; i < 2; i++) {
    const call = await runCli(['call', 'tell-joke', 'topic=cats', '--url', gateway], env);
    assert.equal(call.code, 0, call.stderr);
  }
  await waitFor(
    "the announced tool 'shout' answering through toolbus up",
    async () => {
      const call = await runCli(['call', 'shout', 'text=hi', '--url', gateway], env);
      return call.code === 0 && call.stdout === 'HI\n' ? true : undefined;
    },
    () => up.output(),
  );
  const token = (await readFile(join(home, 'token'), 'utf8')).trim();
  const bad = await fetch(`${gateway}/api/v1/tools/tell-joke/invoke`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{"topic": 5}',
  });
  assert.equal(((await bad.json()) as { isError: boolean }).isError, true);

  const promPort = await freePort();
  const promDir = join(home, 'prometheus');
  const config = [
    'global:',
    '  scrape_interval: 1s',
    '  scrape_timeout: 1s',
    'scrape_configs:',
    '  - job_name: toolbus-up',
    '    static_configs:',
    `      - targets: ['${new URL(upMetrics).host}']`,
    '  - job_name: toolbus-service',
    '    static_configs:',
    `      - targets: ['${new URL(serviceMetrics).host}']`,
    '',
  ].join('\n');
  await writeFile(join(home, 'prometheus.yml'), config);
  let promLog = '';
  const prometheus = spawn(
    prometheusBinary,
    [
      `--config.file=${join(home, 'prometheus.yml')}`,
      `--storage.tsdb.path=${promDir}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  servers.push(prometheus);
  const collect = (d: Buffer): void => void (promLog = (promLog + d.toString()).slice(-20_000));
  prometheus.stdout?.on('data', collect);
  prometheus.stderr?.on('data', collect);
  const prom = `http://127.0.0.1:${promPort}`;
  const promState = (): string => `prometheus log (tail):\n${promLog.slice(-3000)}`;
  await waitFor(
    'prometheus ready (/-/ready)',
    async () => {
      if (prometheus.exitCode !== null) throw new Error(`prometheus exited with ${prometheus.exitCode}`);
      return (await fetch(`${prom}/-/ready`)).status === 200 ? true : undefined;
    },
    promState,
  );

  /** Runs an instant query; the samples, or undefined while Prometheus has none. */
  const query = async (expr: string): Promise<PromSample[] | undefined> => {
    const response = await fetch(`${prom}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await response.json()) as { status: string; data?: { result: PromSample[] } };
    if (body.status !== 'success') throw new Error(`query ${expr}: ${JSON.stringify(body)}`);
    return body.data && body.data.result.length > 0 ? body.data.result : undefined;
  };
  let last: PromSample[] | undefined;
  /** Waits until `expr` has a sample with these labels and this value. */
  const expectSample = async (expr: string, labels: Record<string, string>, value: string): Promise<void> => {
    await waitFor(
      `${expr}{${Object.entries(labels)
        .map(([k, v]) => `${k}="${v}"`)
        .join(',')}} == ${value} in Prometheus`,
      async () => {
        last = await query(expr);
        const found = last?.find((s) => Object.entries(labels).every(([k, v]) => s.metric[k] === v));
        return found?.value[1] === value ? true : undefined;
      },
      () => `last result: ${JSON.stringify(last)}\n${promState()}`,
    );
  };

  await expectSample('up', { job: 'toolbus-up' }, '1');
  await expectSample('up', { job: 'toolbus-service' }, '1');
  const calls = 'toolbus_tool_calls_total';
  await expectSample(calls, { job: 'toolbus-up', tool: 'tell-joke', outcome: 'ok' }, '2');
  await expectSample(calls, { job: 'toolbus-up', tool: 'tell-joke', outcome: 'invalid-arguments' }, '1');
  await expectSample(calls, { job: 'toolbus-up', tool: 'shout', outcome: 'ok' }, '1');
  await expectSample('toolbus_tool_call_duration_seconds_count', { tool: 'tell-joke' }, '3');
  await expectSample('toolbus_tool_calls_in_flight', { job: 'toolbus-up' }, '0');
  const requests = 'toolbus_service_requests_total';
  await expectSample(requests, { job: 'toolbus-up', service: 'joke-service', outcome: 'ok' }, '2');
  await expectSample(requests, { job: 'toolbus-service', service: 'shout', outcome: 'ok' }, '1');
  await expectSample('toolbus_service_queue_depth', { job: 'toolbus-service', service: 'shout' }, '0');
  await expectSample('toolbus_registry_tools', { job: 'toolbus-up' }, '3');
  await expectSample('toolbus_registry_problems', { job: 'toolbus-up', severity: 'error' }, '0');
  await expectSample('toolbus_announced_instances', { job: 'toolbus-up', service: 'shout' }, '1');
  await expectSample('toolbus_bus_connected', { job: 'toolbus-up' }, '1');
  await expectSample('toolbus_bus_connected', { job: 'toolbus-service' }, '1');
  // The process defaults come along on both.
  const memory = await waitFor(
    'process_resident_memory_bytes of both targets',
    async () => {
      const result = await query('process_resident_memory_bytes');
      return result && result.length >= 2 ? result : undefined;
    },
    promState,
  );
  assert.deepEqual(memory.map((s) => s.metric.job).sort(), ['toolbus-service', 'toolbus-up']);

  for (const child of [up.child, service.child]) assert.equal(await interrupt(child), 0);
});
