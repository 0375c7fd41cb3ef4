/**
 * The embedded dev loop: `toolbus up --service <module>` runs your own tool service inside `toolbus up`,
 * on its in-process bus (or on NATS with `--nats`), and `--watch` reloads it when the file changes.
 * Everything through real processes: `toolbus up`, `toolbus config put`, `toolbus call` and HTTP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer } from '../support/nats-server.js';
import { readmeModule } from '../support/readme.js';
import { ROOT, interrupt, runCli, startCli, type StartedCli } from '../support/cli.js';

// The README's echo-service.ts ("Write your own tool service"), verbatim.
const ECHO_SERVICE = readmeModule('echo-service.ts');

// A second module that announces its own tool, so it needs no config items.
const SHOUT_SERVICE = `import { DynamicToolService, type MessageBus } from 'toolbus';

export default (bus: MessageBus) =>
  new DynamicToolService({
    bus,
    topic: 'shout',
    announce: {
      tools: [{ name: 'shout', description: 'Shout', arguments: [{ name: 'text', type: 'string', description: 'What' }] }],
    },
    async invoke(_user, _config, args) {
      return String(args.text).toUpperCase();
    },
  });
`;

const ECHO_ITEMS = [
  [
    'tool-service/echo',
    '{"id":"echo","request-queue":"non-persistent://tg/request/echo","response-queue":"non-persistent://tg/response/echo","config-params":[{"name":"times","required":false}]}',
  ],
  [
    'tool/echo',
    '{"type":"tool-service","name":"echo","description":"Repeat what the user says","service":"echo","times":2,"arguments":[{"name":"text","type":"string","description":"What to repeat"}]}',
  ],
] as const;

interface Fixture {
  dir: string;
  env: NodeJS.ProcessEnv;
  children: ChildProcess[];
}

/** A temp folder (TOOLBUS_HOME and the modules, an ES module package) removed after the test. */
async function fixture(t: { after(fn: () => Promise<void>): void }, prefix: string): Promise<Fixture> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await writeFile(join(dir, 'package.json'), '{"type":"module"}');
  const children: ChildProcess[] = [];
  t.after(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });
  return { dir, env: { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: dir }, children };
}

async function startUp(f: Fixture, args: string[]): Promise<StartedCli & { url: string }> {
  const up = await startCli(['up', '--port', '0', ...args], f.env, /Press Ctrl-C to stop\./);
  f.children.push(up.child);
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())?.[1];
  if (!url) throw new Error(`no gateway URL in the banner:\n${up.output()}`);
  return { ...up, url };
}

/** Waits until the process has printed something matching `pattern` (at most `ms`). */
async function waitForOutput(cli: StartedCli, pattern: RegExp, ms = 20_000): Promise<void> {
  const until = Date.now() + ms;
  while (!pattern.test(cli.output())) {
    if (Date.now() > until) throw new Error(`no ${pattern} within ${ms} ms in:\n${cli.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The output printed after `mark` (so a wait sees only new lines). */
function after(cli: StartedCli, mark: number): StartedCli {
  return { child: cli.child, output: () => cli.output().slice(mark) };
}

async function putItems(f: Fixture, items: readonly (readonly [string, string])[], extra: string[] = []) {
  for (const [item, json] of items) {
    const put = await runCli(['config', 'put', item, ...extra], f.env, json);
    assert.equal(put.code, 0, put.stderr);
  }
}

async function invoke(url: string, token: string, tool: string, args: unknown) {
  const response = await fetch(`${url}/api/v1/tools/${tool}/invoke`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(args),
    signal: AbortSignal.timeout(30_000),
  });
  return (await response.json()) as { content: string; isError: boolean; code?: string };
}

test('up --service runs two service modules in-process: toolbus call, HTTP, and an unavailable hint', async (t) => {
  const f = await fixture(t, 'toolbus-up-service-');
  const echo = join(f.dir, 'echo-service.ts');
  const shout = join(f.dir, 'shout-service.ts');
  await writeFile(echo, ECHO_SERVICE);
  await writeFile(shout, SHOUT_SERVICE);
  const up = await startUp(f, ['--service', echo, '--service', shout]);
  assert.match(
    up.output(),
    /services\s+joke-service, echo \(.*echo-service\.ts\), shout \(.*shout-service\.ts\)/,
  );

  await putItems(f, ECHO_ITEMS);
  const env = { ...f.env, TOOLBUS_URL: up.url };
  const call = await runCli(['call', 'echo', 'text=hello'], env);
  assert.equal(call.code, 0, call.stderr);
  assert.equal(call.stdout, 'anonymous said: hello anonymous said: hello\n');
  const shouted = await runCli(['call', 'shout', 'text=hi'], env);
  assert.equal(shouted.code, 0, shouted.stderr);
  assert.equal(shouted.stdout, 'HI\n');

  const token = (await readFile(join(f.dir, 'token'), 'utf8')).trim();
  const http = await invoke(up.url, token, 'echo', { text: 'hey' });
  assert.deepEqual([http.isError, http.content], [false, 'anonymous said: hey anonymous said: hey']);

  // A tool whose service nobody runs: the error says how to start one.
  await putItems(f, [
    [
      'tool-service/ghost',
      '{"id":"ghost","request-queue":"non-persistent://tg/request/ghost","response-queue":"non-persistent://tg/response/ghost"}',
    ],
    ['tool/ghost', '{"type":"tool-service","name":"ghost","description":"Nobody runs it","service":"ghost"}'],
  ]);
  const ghost = await runCli(['call', 'ghost'], env);
  assert.equal(ghost.code, 1);
  assert.match(ghost.stderr, /^error \(unavailable\): tool service '[^']+' is unavailable/m);
  assert.match(
    ghost.stderr,
    /^hint: start it with: toolbus up --service <module> \(embedded\) or toolbus service <module> --nats <url>/m,
  );

  assert.equal(await interrupt(up.child), 0, up.output());
  assert.match(up.output(), /toolbus: stopped/);
});

/** A module with a call that waits for a `release` file, so a test can hold it in flight. */
function slowService(dir: string, answer: string): string {
  return `import { existsSync } from 'node:fs';
import { DynamicToolService, type MessageBus } from 'toolbus';

export default (bus: MessageBus) =>
  new DynamicToolService({
    bus,
    topic: 'slow',
    async invoke(_user, _config, args) {
      if (args.wait) {
        process.stdout.write('slow call started (${answer})\\n');
        while (!existsSync(${JSON.stringify(join(dir, 'release'))})) await new Promise((r) => setTimeout(r, 20));
      }
      return '${answer}';
    },
  });
`;
}

// Counts its calls in the module's own state: a reloaded (fresh) instance would count from 1 again.
const COUNTER_SERVICE = `import { DynamicToolService, type MessageBus } from 'toolbus';

let calls = 0;
export default (bus: MessageBus) =>
  new DynamicToolService({
    bus,
    topic: 'counter',
    async invoke() {
      calls += 1;
      return String(calls);
    },
  });
`;

test('up --watch reloads a changed module: the call in flight finishes on the old one, others untouched, a broken edit keeps it', async (t) => {
  const f = await fixture(t, 'toolbus-up-watch-');
  const slow = join(f.dir, 'slow-service.ts');
  const counter = join(f.dir, 'counter-service.ts');
  await writeFile(slow, slowService(f.dir, 'v1'));
  await writeFile(counter, COUNTER_SERVICE);
  const up = await startUp(f, ['--no-examples', '--service', slow, '--service', counter, '--watch']);
  assert.match(up.output(), /services\s+slow \(.*slow-service\.ts, reloaded on change\), counter \(/);
  const queue = (name: string): string =>
    `{"id":"${name}","request-queue":"non-persistent://tg/request/${name}","response-queue":"non-persistent://tg/response/${name}"}`;
  const tool = (name: string, args = '[]'): string =>
    `{"type":"tool-service","name":"${name}","description":"${name}","service":"${name}","arguments":${args}}`;
  await putItems(f, [
    ['tool-service/slow', queue('slow')],
    [
      'tool/slow',
      tool('slow', '[{"name":"wait","type":"boolean","description":"hold the call","required":false}]'),
    ],
    ['tool-service/counter', queue('counter')],
    ['tool/counter', tool('counter')],
  ]);
  const env = { ...f.env, TOOLBUS_URL: up.url };
  const token = (await readFile(join(f.dir, 'token'), 'utf8')).trim();
  const counted = await runCli(['call', 'counter'], env);
  assert.equal(counted.stdout, '1\n', counted.stderr);

  // A call held in flight on v1, then the file changes to v2.
  const inFlight = invoke(up.url, token, 'slow', { wait: true });
  await waitForOutput(up, /slow call started \(v1\)/);
  let mark = up.output().length;
  await writeFile(slow, slowService(f.dir, 'v2'));
  await waitForOutput(after(up, mark), /toolbus: reloaded .*slow-service\.ts \(slow\)/);
  const fresh = await runCli(['call', 'slow'], env);
  assert.equal(fresh.stdout, 'v2\n', fresh.stderr);
  await writeFile(join(f.dir, 'release'), '');
  const held = await inFlight;
  assert.deepEqual(
    [held.isError, held.content],
    [false, 'v1'],
    'the call in flight ends on the old instance',
  );
  // The other module kept its instance (and its count).
  const again = await runCli(['call', 'counter'], env);
  assert.equal(again.stdout, '2\n', again.stderr);

  // A broken edit: one line saying why, and v2 keeps answering.
  mark = up.output().length;
  await writeFile(slow, 'export default (;\n');
  await waitForOutput(after(up, mark), /not reloaded/);
  const line = after(up, mark)
    .output()
    .split('\n')
    .find((l) => l.includes('not reloaded'));
  assert.match(
    line ?? '',
    /^toolbus: .*slow-service\.ts not reloaded, the running instance stays: cannot load the service module '.*slow-service\.ts': .*slow-service\.ts:1:\d+: /,
  );
  assert.ok(!line?.includes(ROOT) && !/\bat /.test(after(up, mark).output()), after(up, mark).output());
  const kept = await runCli(['call', 'slow'], env);
  assert.equal(kept.stdout, 'v2\n', kept.stderr);

  // Fixed again: reloads.
  mark = up.output().length;
  await writeFile(slow, slowService(f.dir, 'v3'));
  await waitForOutput(after(up, mark), /toolbus: reloaded .*slow-service\.ts/);
  const fixed = await runCli(['call', 'slow'], env);
  assert.equal(fixed.stdout, 'v3\n', fixed.stderr);

  assert.equal(await interrupt(up.child), 0, up.output());
});

test('up --nats --service runs the module on NATS, where toolbus call --nats reaches it', async (t) => {
  const nats = await startNatsServer({ jetstream: true });
  t.after(() => nats.stop());
  const f = await fixture(t, 'toolbus-up-service-nats-');
  const echo = join(f.dir, 'echo-service.ts');
  await writeFile(echo, ECHO_SERVICE);
  const up = await startUp(f, ['--nats', nats.url, '--no-examples', '--service', echo]);
  assert.match(up.output(), /bus\s+NATS at /);
  assert.match(up.output(), /services\s+echo \(/);
  await putItems(f, ECHO_ITEMS, ['--nats', nats.url]);

  const viaGateway = await runCli(['call', 'echo', 'text=hi', '--user', 'ann'], {
    ...f.env,
    TOOLBUS_URL: up.url,
  });
  assert.equal(viaGateway.stdout, 'ann said: hi ann said: hi\n', viaGateway.stderr);
  const viaNats = await runCli(['call', 'echo', 'text=hi', '--nats', nats.url], f.env);
  assert.equal(viaNats.stdout, 'anonymous said: hi anonymous said: hi\n', viaNats.stderr);

  assert.equal(await interrupt(up.child), 0, up.output());
  // With the service gone, a call on NATS says how to start it there.
  const gone = await runCli(['call', 'echo', 'text=hi', '--nats', nats.url], f.env);
  assert.equal(gone.code, 1);
  assert.match(gone.stderr, /error \(unavailable\)/);
  assert.match(
    gone.stderr,
    new RegExp(`hint: .*toolbus service <module> --nats ${nats.url.replace(/\./g, '\\.')}`),
  );
});
