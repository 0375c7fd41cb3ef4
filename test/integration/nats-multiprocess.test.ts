/**
 * @module Multi-process tests on a real nats-server: an agent process and two replica processes of a tool
 * service, load sharing, `kill -9` of a replica under load, a nats-server restart mid-run, 10 000 calls
 * in flight, and the CLI's `--nats`.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { NatsBus, NatsKvConfigStore } from '../../src/bus/nats/index.js';
import { ToolServiceClient } from '../../src/services/index.js';
import { startNatsServer, type NatsServer } from '../support/nats-server.js';
import { LOAD_SERVICE, LOAD_TOOL } from '../fixtures/nats-load-descriptors.js';

const root = new URL('../..', import.meta.url).pathname;
const fixture = (name: string): string => new URL(`../fixtures/${name}`, import.meta.url).pathname;

type Line = Record<string, unknown>;

/** A child process speaking JSON lines on stdout (and taking commands on stdin). */
interface Child {
  readonly process: ChildProcess;
  readonly name: string;
  send(command: Line | string): void;
  /** The next line matching `match`, failing after `ms`. */
  next(match: (line: Line) => boolean, ms?: number): Promise<Line>;
  /** Lines seen so far matching `match` (from the start). */
  seen(match: (line: Line) => boolean): Line[];
  kill(signal: NodeJS.Signals): Promise<void>;
}

const children = new Set<Child>();

function startChild(name: string, script: string, args: string[]): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines: Line[] = [];
  const waiters = new Set<{ match: (line: Line) => boolean; from: number; resolve: (l: Line) => void }>();
  let exited = false;
  createInterface({ input: proc.stdout! }).on('line', (text) => {
    let line: Line;
    try {
      line = JSON.parse(text) as Line;
    } catch {
      return;
    }
    lines.push(line);
    for (const w of waiters) {
      if (w.match(line)) {
        waiters.delete(w);
        w.resolve(line);
      }
    }
  });
  const exit = new Promise<void>((resolve) => proc.once('exit', () => ((exited = true), resolve())));
  const child: Child = {
    process: proc,
    name,
    send(command) {
      proc.stdin!.write((typeof command === 'string' ? command : JSON.stringify(command)) + '\n');
    },
    next(match, ms = 20_000) {
      return new Promise((resolve, reject) => {
        const waiter = {
          match,
          from: lines.length,
          resolve: (l: Line) => {
            clearTimeout(timer);
            resolve(l);
          },
        };
        if (exited) {
          reject(new Error(`${name} has exited; last lines: ${JSON.stringify(lines.slice(-3))}`));
          return;
        }
        void exit.then(() => {
          if (!waiters.delete(waiter)) return;
          clearTimeout(timer);
          reject(new Error(`${name} exited; last lines: ${JSON.stringify(lines.slice(-3))}`));
        });
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(
            new Error(
              `${name}: no matching line within ${ms} ms; last lines: ${JSON.stringify(lines.slice(-3))}`,
            ),
          );
        }, ms);
        waiters.add(waiter);
      });
    },
    seen: (match) => lines.filter(match),
    async kill(signal) {
      if (!exited) proc.kill(signal);
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
      await exit;
      clearTimeout(timer);
      children.delete(child);
    },
  };
  children.add(child);
  return child;
}

async function startReplica(url: string, name: string): Promise<Child> {
  const child = startChild(name, fixture('nats-replica.ts'), [url, name]);
  await child.next((l) => l.ready === name, 30_000);
  return child;
}

interface LoadReply {
  sent: number;
  ok: number;
  errors: Record<string, number>;
  untyped: number;
  hung: number;
  byReplica: Record<string, number>;
  pending: number;
  busWatches: number;
}

async function runLoad(
  agent: Child,
  command: { calls: number; concurrency: number; timeoutMs: number; delayMs?: number },
  during?: { afterDone: number; action: () => Promise<void> },
): Promise<LoadReply> {
  const reply = agent.next((l) => l.reply === 'load', 120_000);
  agent.send({ op: 'load', graceMs: 2_000, ...command });
  if (during) {
    await agent.next((l) => typeof l.progress === 'number' && l.progress >= during.afterDone, 60_000);
    await during.action();
  }
  const result = (await reply) as unknown as LoadReply & { error?: string };
  assert.equal(result.error, undefined);
  return result;
}

/** Asks the agent process to run its ToolUseAgent on the registry's tools; returns what the replica served. */
async function askRegistry(agent: Child, tool: string): Promise<Record<string, unknown>> {
  agent.send({ op: 'ask', n: 1, tool, registry: true });
  const asked = (await agent.next((l) => l.reply === 'ask')) as {
    observations: { content: string; isError: boolean }[];
    error?: string;
  };
  assert.equal(asked.error, undefined);
  assert.equal(asked.observations[0]?.isError, false, asked.observations[0]?.content);
  return JSON.parse(asked.observations[0]!.content) as Record<string, unknown>;
}

/** Every call is accounted for: answered, or failed with a typed error; none untyped, none hung. */
function assertAccounted(result: LoadReply, allowed: string[]): void {
  const failed = Object.values(result.errors).reduce((a, b) => a + b, 0);
  assert.equal(result.hung, 0, `calls hung past their timeout: ${JSON.stringify(result)}`);
  assert.equal(result.untyped, 0, `calls failed without a typed error: ${JSON.stringify(result)}`);
  assert.equal(result.sent, result.ok + failed, `calls lost silently: ${JSON.stringify(result)}`);
  for (const code of Object.keys(result.errors)) {
    assert.ok(allowed.includes(code), `unexpected error code '${code}': ${JSON.stringify(result)}`);
  }
  assert.equal(result.pending, 0, 'the pending table drained');
}

describe('NATS: an agent process and two replica processes', () => {
  let server: NatsServer;
  let agent: Child;
  let replicaA: Child;
  let replicaB: Child;

  before(async () => {
    server = await startNatsServer({ jetstream: true });
    [replicaA, replicaB, agent] = await Promise.all([
      startReplica(server.url, 'replica-a'),
      startReplica(server.url, 'replica-b'),
      (async () => {
        const child = startChild('agent', fixture('nats-agent.ts'), [server.url]);
        await child.next((l) => l.ready === true, 30_000);
        return child;
      })(),
    ]);
  });
  after(async () => {
    await Promise.all([...children].map((c) => c.kill('SIGKILL')));
    await server?.stop();
  });

  test('the load is shared by both replicas, and the ToolUseAgent calls the tool over NATS', async () => {
    const result = await runLoad(agent, { calls: 400, concurrency: 32, timeoutMs: 5_000 });
    assertAccounted(result, []);
    assert.equal(result.ok, 400);
    assert.ok((result.byReplica['replica-a'] ?? 0) > 0, JSON.stringify(result.byReplica));
    assert.ok((result.byReplica['replica-b'] ?? 0) > 0, JSON.stringify(result.byReplica));

    agent.send({ op: 'ask', n: 7 });
    const asked = (await agent.next((l) => l.reply === 'ask')) as {
      answer: string;
      observations: { content: string; isError: boolean }[];
      error?: string;
    };
    assert.equal(asked.error, undefined);
    assert.equal(asked.answer, 'the load tool answered');
    assert.equal(asked.observations.length, 1);
    assert.equal(asked.observations[0]?.isError, false);
    const served = JSON.parse(asked.observations[0]!.content) as Record<string, unknown>;
    // `user` comes from the agent's run, `factor` from the tool descriptor, `n` from the model.
    assert.deepEqual({ ...served, replica: undefined }, { replica: undefined, n: 7, user: 'bob', factor: 2 });
  });

  test('10 000 calls in flight all complete and every pending table drains to zero', async () => {
    const result = await runLoad(agent, { calls: 10_000, concurrency: 10_000, timeoutMs: 60_000 });
    assertAccounted(result, []);
    assert.equal(result.ok, 10_000);
    assert.equal(result.busWatches, 0, 'no no-responders watch left on the bus');
    for (const replica of [replicaA, replicaB]) {
      replica.send('stats');
      const { stats } = (await replica.next((l) => l.stats !== undefined)) as {
        stats: { inFlight: number; queued: number };
      };
      assert.equal(stats.inFlight, 0, `${replica.name} has no call running`);
      assert.equal(stats.queued, 0, `${replica.name} has no call queued`);
    }
  });

  test('kill -9 of one replica under load: every call answers or fails typed, none hangs, none is lost', async (t) => {
    const result = await runLoad(
      agent,
      { calls: 3_000, concurrency: 64, timeoutMs: 2_000, delayMs: 2 },
      { afterDone: 500, action: () => replicaB.kill('SIGKILL') },
    );
    t.diagnostic(`under kill -9: ${JSON.stringify(result)}`);
    assertAccounted(result, ['timeout', 'unavailable']);
    assert.ok(result.ok > 500, JSON.stringify(result));
    // After the kill the survivor takes every call.
    const after = await runLoad(agent, { calls: 200, concurrency: 16, timeoutMs: 5_000 });
    assertAccounted(after, []);
    assert.deepEqual(after.byReplica, { 'replica-a': 200 });
    replicaB = await startReplica(server.url, 'replica-b2');
  });

  test('nats-server restart mid-run: in-flight calls fail typed, clients reconnect, later calls succeed, KV config intact', async (t) => {
    const store = await NatsKvConfigStore.connect({ servers: server.url, reconnectWaitMs: 50 });
    const revision = await store.put('tool-service', 'load-service', LOAD_SERVICE);
    await store.close();

    const during = await runLoad(
      agent,
      { calls: 3_000, concurrency: 32, timeoutMs: 2_000, delayMs: 1 },
      { afterDone: 300, action: () => server.restart({ kill: true }) },
    );
    t.diagnostic(`across the restart: ${JSON.stringify(during)}`);
    assertAccounted(during, ['timeout', 'unavailable']);

    // Wait (bounded) until the replicas are back on the restarted server.
    let probe: LoadReply | undefined;
    for (let i = 0; i < 100; i++) {
      probe = await runLoad(agent, { calls: 20, concurrency: 20, timeoutMs: 2_000 });
      if (probe.ok === 20 && Object.keys(probe.byReplica).length === 2) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(probe?.ok, 20, `replicas did not come back: ${JSON.stringify(probe)}`);
    const later = await runLoad(agent, { calls: 500, concurrency: 32, timeoutMs: 5_000 });
    assertAccounted(later, []);
    assert.equal(later.ok, 500);

    agent.send({ op: 'config-get', type: 'tool-service', key: 'load-service' });
    const { item } = (await agent.next((l) => l.reply === 'config-get')) as {
      item: { revision: number; value: Record<string, unknown> };
    };
    assert.equal(item.revision, revision);
    assert.deepEqual(item.value, LOAD_SERVICE);
  });

  test('hot reload across processes: the registry of the agent process picks up tools put into NATS KV by another process', async () => {
    agent.send({ op: 'registry-start' });
    const started = (await agent.next((l) => l.reply === 'registry-start')) as {
      tools: string[];
      error?: string;
    };
    assert.equal(started.error, undefined);
    assert.ok(!started.tools.includes('load-kv'));

    // Another process (the CLI) writes the tool; the agent process sees it through the KV watch.
    const toolItem = { ...LOAD_TOOL, name: 'load-kv', factor: 5 };
    const appeared = agent.next(
      (l) => Array.isArray(l.registry) && (l.registry as string[]).includes('load-kv'),
    );
    const put = await toolbus(
      ['config', 'put', 'tool/load-kv', '--nats', server.url],
      JSON.stringify(toolItem),
    );
    assert.equal(put.code, 0, put.stderr);
    await appeared;
    const first = await askRegistry(agent, 'load-kv');
    assert.equal(first.factor, 5);

    // A change of a config value is live at the next call, without a restart.
    const store = await NatsKvConfigStore.connect({ servers: server.url });
    try {
      const changed = agent.next((l) => Array.isArray(l.registry));
      await store.put('tool', 'load-kv', { ...toolItem, factor: 7 });
      await changed;
      assert.equal((await askRegistry(agent, 'load-kv')).factor, 7);
      const gone = agent.next(
        (l) => Array.isArray(l.registry) && !(l.registry as string[]).includes('load-kv'),
      );
      await store.delete('tool', 'load-kv');
      await gone;
    } finally {
      await store.close();
    }
  });
});

/** Runs `toolbus <args>` as a child process. */
function toolbus(
  args: string[],
  stdin = '',
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
      cwd: root,
      env: { ...process.env, TOOLBUS_NATS: '' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

describe('the CLI with --nats', () => {
  let server: NatsServer;
  before(async () => {
    server = await startNatsServer({ jetstream: true });
  });
  after(() => server.stop());

  test('toolbus config --nats writes to and reads from NATS KV, seen by another process', async () => {
    const value = {
      id: 'joke-service',
      'request-queue': 'request:tg:joke',
      'response-queue': 'response:tg:joke',
    };
    const put = await toolbus(
      ['config', 'put', 'tool-service/joke-service', '--nats', server.url],
      JSON.stringify(value),
    );
    assert.equal(put.code, 0, put.stderr);
    const store = await NatsKvConfigStore.connect({ servers: server.url });
    try {
      assert.deepEqual((await store.get('tool-service', 'joke-service'))?.value, value);
      await store.put('tool', 'tell-joke', {
        type: 'tool-service',
        name: 'tell-joke',
        service: 'joke-service',
      });
    } finally {
      await store.close();
    }
    const list = await toolbus(['config', 'list', '--json', '--nats', server.url]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /tool-service/);
    assert.match(list.stdout, /tell-joke/);
  });

  test('toolbus config --nats on a port with no server fails with a message naming NATS', async () => {
    const get = await toolbus(['config', 'get', 'tool/x', '--nats', 'nats://127.0.0.1:1']);
    assert.equal(get.code, 1);
    assert.match(get.stderr, /NATS/);
  });

  test('toolbus service --nats serves the joke example to a client in another process', async (t) => {
    const service = startChild('service', 'src/cli/main.ts', [
      'service',
      'examples/joke-service/service.ts',
      '--nats',
      server.url,
    ]);
    t.after(() => service.kill('SIGTERM'));
    const bus = await NatsBus.connect({ servers: server.url });
    t.after(() => bus.close());
    const client = new ToolServiceClient(bus, {
      requestQueue: 'non-persistent://tg/request/joke',
      responseQueue: 'non-persistent://tg/response/joke',
    });
    t.after(() => client.close());
    let reply: string | undefined;
    for (let i = 0; i < 150 && reply === undefined; i++) {
      reply = await client
        .call('alice', { style: 'pun' }, { topic: 'cats' }, { timeoutMs: 2_000 })
        .catch((e: unknown) => {
          if ((e as { code?: string }).code !== 'unavailable') throw e;
          return undefined;
        });
      if (reply === undefined) await new Promise((r) => setTimeout(r, 100));
    }
    assert.match(reply ?? '', /^Hey alice!/);
  });
});
