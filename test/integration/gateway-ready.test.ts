/**
 * `/api/v1/ready`: each part (config store, model, and what the embedder adds, e.g. bus and registry)
 * with 200 when every required part is ready and 503 otherwise; details only with the token. Then
 * against a real `toolbus up --nats` whose broker goes away and comes back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LiveToolSet, MemoryConfigStore } from '../../src/index.js';
import { createGateway, type GatewayOptions } from '../../src/gateway/index.js';
import { startNatsServer } from '../support/nats-server.js';
import { startCli } from '../support/cli.js';

const TOKEN = 'ready-test-token';

interface Readiness {
  status: string;
  parts: Record<string, { ok: boolean; required: boolean; detail?: string }>;
}

async function ready(url: string, withToken: boolean): Promise<{ status: number; body: Readiness }> {
  const response = await fetch(`${url}/api/v1/ready`, {
    headers: withToken ? { authorization: `Bearer ${TOKEN}` } : {},
  });
  return { status: response.status, body: (await response.json()) as Readiness };
}

async function gateway(
  t: { after(fn: () => Promise<void>): void },
  options: Partial<GatewayOptions>,
): Promise<string> {
  const gw = createGateway({ tools: new LiveToolSet([]), token: TOKEN, ...options });
  const url = await gw.listen({ port: 0 });
  t.after(() => gw.close());
  return url;
}

test('ready: 200 with every required part ready; without a model it is still ready, and says so', async (t) => {
  const url = await gateway(t, {
    store: new MemoryConfigStore(),
    agentUnavailableMessage: 'set OPENAI_API_KEY',
  });
  const open = await ready(url, false);
  assert.equal(open.status, 200);
  assert.deepEqual(open.body, {
    status: 'ready',
    parts: { store: { ok: true, required: true }, model: { ok: false, required: false } },
  });
  const owner = await ready(url, true);
  assert.equal(owner.status, 200);
  assert.equal(owner.body.parts.model?.detail, 'set OPENAI_API_KEY');
  assert.equal(owner.body.parts.store?.detail, 'the config store answers');
  const head = await fetch(`${url}/api/v1/ready`, { method: 'HEAD' });
  assert.equal(head.status, 200);
});

test('ready: 503 naming the part when the store fails, a check hangs, or an added part is down', async (t) => {
  const store = new MemoryConfigStore();
  store.revision = () => Promise.reject(new Error('the disk went away'));
  const url = await gateway(t, {
    store,
    readiness: {
      bus: () => ({ ok: false, detail: 'the bus is disconnected from its broker' }),
      slow: () => new Promise(() => undefined),
      optional: () => ({ ok: false, required: false }),
    },
  });
  const open = await ready(url, false);
  assert.equal(open.status, 503);
  assert.equal(open.body.status, 'not-ready');
  assert.equal(open.body.parts.store?.ok, false);
  assert.equal(open.body.parts.store?.detail, undefined, 'no detail without the token');
  const owner = await ready(url, true);
  assert.equal(owner.status, 503);
  assert.equal(owner.body.parts.store?.detail, 'the disk went away');
  assert.equal(owner.body.parts.bus?.detail, 'the bus is disconnected from its broker');
  assert.deepEqual(owner.body.parts.slow, { ok: false, required: true, detail: 'no answer within 2000 ms' });
  assert.deepEqual(owner.body.parts.optional, { ok: false, required: false });
  // Liveness stays trivial.
  assert.equal((await fetch(`${url}/api/v1/health`)).status, 200);
});

test('toolbus up --nats: not ready (bus, store) while the broker is down, ready again once it is back', async (t) => {
  const nats = await startNatsServer({ jetstream: true });
  const home = await mkdtemp(join(tmpdir(), 'toolbus-ready-'));
  const children: ChildProcess[] = [];
  t.after(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await nats.stop();
    await rm(home, { recursive: true, force: true });
  });
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home };
  const up = await startCli(
    ['up', '--nats', nats.url, '--port', '0', '--no-examples'],
    env,
    /Press Ctrl-C to stop\./,
  );
  children.push(up.child);
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())?.[1];
  assert.ok(url, up.output());
  const token = (await readFile(join(home, 'token'), 'utf8')).trim();
  const check = async (): Promise<{ status: number; body: Readiness }> => {
    const response = await fetch(`${url}/api/v1/ready`, { headers: { authorization: `Bearer ${token}` } });
    return { status: response.status, body: (await response.json()) as Readiness };
  };
  const before = await check();
  assert.equal(before.status, 200, JSON.stringify(before.body));
  assert.deepEqual(Object.keys(before.body.parts).sort(), ['audit', 'bus', 'model', 'registry', 'store']);

  const restart = nats.restart({ kill: true, downMs: 3_000 });
  let down: { status: number; body: Readiness } | undefined;
  for (let i = 0; i < 100 && !down; i++) {
    // The store or audit may notice first (a KV call fails fast); wait until the bus says so too.
    const now = await check();
    if (now.status === 503 && now.body.parts.bus?.ok === false) down = now;
    else await sleep(50);
  }
  assert.ok(down, 'not ready while the broker is down');
  assert.equal(down.body.parts.bus?.ok, false);
  assert.match(String(down.body.parts.bus?.detail), /disconnected/);
  await restart;
  let back = await check();
  for (let i = 0; i < 300 && back.status !== 200; i++) {
    await sleep(100);
    back = await check();
  }
  assert.equal(back.status, 200, JSON.stringify(back.body));
});
