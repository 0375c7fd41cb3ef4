/**
 * @module Durable tool calls against real `nats-server` processes and replica processes killed with
 * SIGKILL: a long call finishes on the other replica, a broker restart loses nothing, a caller that
 * went away fetches its result, and 1,000 calls under random kills are all answered, with duplicates no
 * more than the redeliveries and exactly one effect per key for an idempotent tool.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { NatsBus } from '../../src/bus/nats/index.js';
import { DynamicToolService, ToolServiceClient } from '../../src/services/index.js';
import { startNatsServer, type NatsServer } from '../support/nats-server.js';

const QUEUES = { requestQueue: 'request:tg:durable-chaos', responseQueue: 'response:tg:durable-chaos' };
const ACK_WAIT_MS = 1_000;

interface Line {
  ready?: string;
  start?: string;
  done?: string;
  attempt?: number;
  key?: string;
}

/** A replica process and what it printed. */
interface Replica {
  readonly name: string;
  readonly process: ChildProcess;
  readonly lines: Line[];
  readonly exited: Promise<void>;
}

let server: NatsServer;
let dir: string;
let effects: string;
const replicas = new Set<Replica>();
/** Every line any replica printed, in arrival order (killed replicas' too). */
const allLines: (Line & { replica: string })[] = [];

before(async () => {
  server = await startNatsServer({ jetstream: true });
  dir = await mkdtemp(join(tmpdir(), 'toolbus-durable-'));
  effects = join(dir, 'effects.db');
});

after(async () => {
  await Promise.all([...replicas].map((r) => kill(r)));
  await server.stop();
  await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
});

async function startReplica(name: string): Promise<Replica> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'test/fixtures/durable-replica.ts', server.url, name, effects, String(ACK_WAIT_MS)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const replica: Replica = {
    name,
    process: child,
    lines: [],
    exited: new Promise((resolve) => child.once('exit', () => resolve())),
  };
  replicas.add(replica);
  const ready = new Promise<void>((resolve, reject) => {
    child.once('exit', () => reject(new Error(`replica ${name} exited before it was ready`)));
    createInterface({ input: child.stdout! }).on('line', (text) => {
      let line: Line;
      try {
        line = JSON.parse(text) as Line;
      } catch {
        return;
      }
      replica.lines.push(line);
      allLines.push({ ...line, replica: name });
      if (line.ready) resolve();
    });
  });
  await ready;
  return replica;
}

async function kill(replica: Replica): Promise<void> {
  replicas.delete(replica);
  if (replica.process.exitCode === null && replica.process.signalCode === null)
    replica.process.kill('SIGKILL');
  await replica.exited;
}

async function waitFor<T>(check: () => T | undefined, ms: number, what: string): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

async function client(): Promise<{ bus: NatsBus; client: ToolServiceClient }> {
  const bus = await NatsBus.connect({ servers: server.url, reconnectWaitMs: 50 });
  return { bus, client: new ToolServiceClient(bus, { ...QUEUES, delivery: 'durable', timeoutMs: 30_000 }) };
}

test('kill -9 of the replica running a long durable call: the other replica finishes it', async () => {
  const a = await startReplica('a');
  const b = await startReplica('b');
  const { bus, client: c } = await client();
  try {
    const pending = c.call('alice', {}, { ms: 3_000, n: 1, chunks: 2 }, { id: 'long-1' });
    const first = await waitFor(
      () => allLines.find((l) => l.start === 'long-1'),
      10_000,
      'the long call to start',
    );
    const runner = first.replica === 'a' ? a : b;
    const other = runner === a ? b : a;
    await kill(runner);
    const text = await pending;
    assert.equal(text, `chunk 0 chunk 1 done 1 by ${other.name}`);
    // Started twice: by the killed replica, then by the other one on a later attempt (2, or 3 when the
    // server first handed the redelivery to a pull request the dead replica had left open).
    const starts = allLines.filter((l) => l.start === 'long-1');
    assert.deepEqual(
      starts.map((l) => l.replica),
      [runner.name, other.name],
    );
    assert.equal(starts[0]!.attempt, 1);
    const again = starts[1]!.attempt ?? 0;
    assert.ok(again >= 2 && again <= 3, `attempt ${again}`);
    const record = await waitForRecord(c, 'long-1');
    assert.equal(record.status, 'completed');
    assert.equal(record.attempt, again);
  } finally {
    await c.close();
    await bus.close();
    await kill(a);
    await kill(b);
  }
});

test('a nats-server restart mid-call: the call completes and its caller gets the result', async () => {
  const a = await startReplica('r1');
  const { bus, client: c } = await client();
  try {
    const pending = c.call('', {}, { ms: 2_500, n: 2 }, { id: 'across-restart' });
    await waitFor(() => allLines.find((l) => l.start === 'across-restart'), 10_000, 'the call to start');
    await server.restart({ downMs: 500 });
    assert.equal(await pending, 'done 2 by r1');
    const record = await waitForRecord(c, 'across-restart');
    assert.equal(record.response, 'done 2 by r1');
  } finally {
    await c.close();
    await bus.close();
    await kill(a);
  }
});

test('a caller that went away comes back and fetches its result by call id', async () => {
  const a = await startReplica('r2');
  try {
    const first = await client();
    const id = await first.client.start('bob', {}, { ms: 800, n: 3 }, { toolName: 'report' });
    // The caller leaves: its process, its connection, its subscriptions.
    await first.client.close();
    await first.bus.close();
    const again = await client();
    try {
      let last;
      for await (const record of again.client.watch(id, { signal: AbortSignal.timeout(15_000) }))
        last = record;
      assert.equal(last?.status, 'completed');
      assert.equal(last?.response, 'done 3 by r2');
      assert.equal(last?.tool, 'report');
      assert.equal(last?.user, 'bob');
    } finally {
      await again.client.close();
      await again.bus.close();
    }
  } finally {
    await kill(a);
  }
});

test('1,000 durable calls under random replica kills: none lost, duplicates within redeliveries, one effect per idempotent key', async () => {
  const names = ['x1', 'x2', 'x3'];
  const live = new Map<string, Replica>();
  for (const name of names) live.set(name, await startReplica(name));
  const { bus, client: c } = await client();
  const CALLS = 1_000;
  const KEYED = CALLS / 5;
  let stop = false;
  let kills = 0;
  // Chaos: every 150–350 ms one replica is killed with SIGKILL and started again.
  const chaos = (async () => {
    let generation = 0;
    while (!stop) {
      await sleep(150 + Math.floor(Math.random() * 200));
      if (stop) break;
      const name = names[Math.floor(Math.random() * names.length)]!;
      const victim = live.get(name);
      if (victim) {
        await kill(victim);
        kills++;
      }
      live.set(name, await startReplica(`${name}.${++generation}`));
    }
  })();
  try {
    const ids = Array.from({ length: CALLS }, (_, i) => `chaos-${i}`);
    const results = new Map<string, string>();
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < ids.length) {
        const i = next++;
        const id = ids[i]!;
        // Every fifth call is to the idempotent tool, with a key of its own.
        const keyed = i % 5 === 0;
        const args = keyed ? { ms: 40, keyed: true } : { ms: 40 + (i % 80), n: i };
        const options = keyed ? { id, idempotencyKey: `key-${i}`, idempotent: true } : { id };
        results.set(id, await c.call('', {}, args, options));
      }
    };
    await Promise.all(Array.from({ length: 48 }, worker));
    // The idempotent keys again, as a caller retrying after the first calls ended.
    for (let i = 0; i < CALLS; i += 5) {
      const again = await c.call(
        '',
        {},
        { ms: 20, keyed: true },
        {
          id: `again-${i}`,
          idempotencyKey: `key-${i}`,
          idempotent: true,
        },
      );
      assert.equal(again, results.get(`chaos-${i}`), `key-${i}: the repeat got the first outcome`);
    }
    stop = true;
    await chaos;
    assert.equal(results.size, CALLS, 'every call answered: none lost');
    assert.ok(kills >= 3, `the replicas were killed (${kills} kills)`);

    const starts = allLines.filter((l) => l.start?.startsWith('chaos-'));
    const dones = allLines.filter((l) => l.done?.startsWith('chaos-'));
    const redeliveries = starts.filter((l) => (l.attempt ?? 1) > 1).length;
    const completedBy = new Map<string, number>();
    for (const l of dones) completedBy.set(l.done!, (completedBy.get(l.done!) ?? 0) + 1);
    const duplicates = [...completedBy.values()].reduce((sum, n) => sum + n - 1, 0);
    assert.ok(
      duplicates <= redeliveries,
      `duplicates (${duplicates}) are no more than the redeliveries (${redeliveries})`,
    );
    // A repeat of a finished key never ran again.
    assert.equal(allLines.filter((l) => l.start?.startsWith('again-')).length, 0, 'no repeat ran');
    const db = new Database(effects, { readonly: true });
    try {
      const rows = db.prepare("SELECT key, value FROM effects WHERE key LIKE 'key-%'").all() as {
        key: string;
        value: string;
      }[];
      assert.equal(rows.length, KEYED, 'exactly one effect per idempotent key');
      for (const row of rows) {
        const i = Number(row.key.slice(4));
        assert.equal(results.get(`chaos-${i}`), row.value, `${row.key}: the caller got the effect's value`);
      }
    } finally {
      db.close();
    }
    process.stdout.write(
      `# 1,000 durable calls: ${kills} kills, ${redeliveries} redeliveries, ${duplicates} duplicates, 0 lost\n`,
    );
  } finally {
    stop = true;
    await chaos.catch(() => undefined);
    await c.close();
    await bus.close();
    for (const replica of live.values()) await kill(replica);
  }
});

test('without JetStream, a durable service and a durable call fail at once, saying nats-server needs -js', async (t) => {
  const plain = await startNatsServer({ jetstream: false });
  const bus = await NatsBus.connect({ servers: plain.url });
  t.after(async () => {
    await bus.close();
    await plain.stop();
  });
  const c = new ToolServiceClient(bus, { ...QUEUES, delivery: 'durable', timeoutMs: 10_000 });
  const started = Date.now();
  await assert.rejects(c.call('', {}, {}), (error: Error & { code?: string }) => {
    assert.equal(error.code, 'unavailable');
    assert.match(error.message, /JetStream is not available .*expected nats-server running with -js/);
    return true;
  });
  assert.ok(Date.now() - started < 5_000, 'not at the timeout');
  await c.close();
  const service = new DynamicToolService({ bus, ...QUEUES, delivery: 'durable', invoke: () => 'never' });
  await assert.rejects(service.start(), /JetStream is not available/);
});

async function waitForRecord(c: ToolServiceClient, id: string) {
  const end = Date.now() + 10_000;
  for (;;) {
    const record = await c.result(id);
    if (record && ['completed', 'failed', 'cancelled'].includes(record.status)) return record;
    if (Date.now() > end) throw new Error(`call '${id}' has no final state: ${JSON.stringify(record)}`);
    await sleep(50);
  }
}
