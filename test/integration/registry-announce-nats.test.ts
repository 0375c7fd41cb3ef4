import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { NatsBus } from '../../src/bus/nats/index.js';
import { MemoryConfigStore } from '../../src/config/index.js';
import { ToolRegistry } from '../../src/registry/index.js';
import { startNatsServer } from '../support/nats-server.js';

const replicaScript = new URL('../fixtures/nats-replica.ts', import.meta.url).pathname;
const repo = new URL('../..', import.meta.url).pathname;

/** Starts a `load` service replica (announces with TTL 3 s, heartbeat 0.5 s) and waits until it is ready. */
async function startReplica(url: string, name: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', replicaScript, url, name], {
    cwd: repo,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  try {
    for await (const line of lines) if (line.includes('"ready"')) return child;
    throw new Error(`replica '${name}' exited before it was ready`);
  } finally {
    clearTimeout(timer);
  }
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once('exit', () => resolve()));
}

test('announced services across processes on NATS: appear, two instances, goodbye, heartbeat lapse after kill -9', async (t) => {
  const nats = await startNatsServer({ jetstream: false });
  t.after(() => nats.stop());
  const bus = await NatsBus.connect({ servers: nats.url });
  const registry = new ToolRegistry({ store: new MemoryConfigStore(), bus });
  t.after(async () => {
    await registry.close();
    await bus.close();
  });
  const children: ChildProcess[] = [];
  t.after(() => children.forEach((c) => c.kill('SIGKILL')));

  const has = () => registry.tools.get('load') !== undefined;
  const until = async (check: () => boolean, what: string, maxMs = 15_000) => {
    const end = Date.now() + maxMs;
    while (!check()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  // A replica that was already running before the registry starts is found through "announce now".
  children.push(await startReplica(nats.url, 'replica-a'));
  await registry.start();
  await until(has, 'the announced tool to appear');
  const first = await registry.tools.call('load', { n: 1, delayMs: 0 });
  assert.equal(first.isError, false, first.content);
  assert.equal((JSON.parse(first.content) as { factor: number }).factor, 2);

  children.push(await startReplica(nats.url, 'replica-b'));
  // Graceful stop of A: goodbye, but B still announces, so the tool stays and calls go to B.
  children[0]!.kill('SIGTERM');
  await exited(children[0]!);
  await new Promise((r) => setTimeout(r, 300));
  await registry.refresh();
  assert.ok(has(), 'the tool stays while another instance is alive');
  const viaB = await registry.tools.call('load', { n: 2, delayMs: 0 });
  assert.equal((JSON.parse(viaB.content) as { replica: string }).replica, 'replica-b');

  // kill -9 of B: no goodbye; the tool goes once its heartbeat lapses (TTL 3 s).
  children[1]!.kill('SIGKILL');
  await exited(children[1]!);
  assert.ok(has(), 'a killed instance is not withdrawn before its TTL');
  await until(() => !has(), 'the tool to be withdrawn after the TTL');
});
