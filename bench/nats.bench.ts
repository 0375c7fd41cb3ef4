/**
 * @module NATS request/response: a tool-service call over `NatsBus` (ToolServiceClient → DynamicToolService
 * in another process) against the raw NATS client doing the same JSON work, with `nc.request()` and with
 * its own reply subject and an id map, each at 1, 64 and 512 calls in flight. Starts its own nats-server.
 * Targets: tool-service throughput ≥ 0.9× the best raw pattern and ≥ 2× `nc.request()`, p50 ≤ 1.2× the
 * raw own-reply pattern; RSS of an idle agent process connected to NATS ≤ 80 MB.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { connect, createInbox, headers, type NatsConnection } from '@nats-io/transport-node';
import { NatsBus } from '../src/bus/nats/index.js';
import { ToolServiceClient } from '../src/services/index.js';
import { startNatsServer } from '../test/support/nats-server.js';
import { LOAD_SERVICE } from '../test/fixtures/nats-load-descriptors.js';
import { measure, type BenchRow, type BenchTable } from './harness.js';

const root = new URL('..', import.meta.url).pathname;
const CONCURRENCY = [1, 64, 512];
/** Rounds per pattern at each concurrency (short sequential rounds get more); the best one is kept. */
const ROUNDS: Record<number, number> = { 1: 5, 64: 3, 512: 3 };
const USER = 'alice';
const CONFIG = { factor: 2, style: 'pun', region: 'eu-west', notes: 'bench' };

/** A request envelope of about 225 bytes, as in research/bus-bench.md. */
function envelope(n: number): string {
  return JSON.stringify({
    user: USER,
    config: JSON.stringify(CONFIG),
    arguments: JSON.stringify({ n, delayMs: 0, topic: 'a topic of a reasonable length for a tool call' }),
  });
}

interface ChildHandle {
  process: ChildProcess;
  line(match: (l: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

function child(script: string, args: string[], nodeArgs: string[] = []): ChildHandle {
  const loader = nodeArgs.includes('--import') || script.endsWith('.mjs') ? [] : ['--import', 'tsx'];
  const proc = spawn(process.execPath, [...nodeArgs, ...loader, script, ...args], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const waiters: {
    match: (l: Record<string, unknown>) => boolean;
    resolve: (l: Record<string, unknown>) => void;
  }[] = [];
  createInterface({ input: proc.stdout! }).on('line', (text) => {
    let l: Record<string, unknown>;
    try {
      l = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return;
    }
    for (const w of [...waiters]) {
      if (w.match(l)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(l);
      }
    }
  });
  return {
    process: proc,
    line: (match) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${script}: no reply within 30 s`)), 30_000);
        waiters.push({
          match,
          resolve: (l) => {
            clearTimeout(timer);
            resolve(l);
          },
        });
      }),
    stop: async () => {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 3_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The raw pattern of the research: publish with a reply subject, one response subscription, an id map. */
function ownReplyClient(nc: NatsConnection): (body: string) => Promise<unknown> {
  const inbox = createInbox();
  const pending = new Map<string, (data: Uint8Array) => void>();
  nc.subscribe(inbox, {
    callback: (_error, msg) => {
      const id = msg.headers?.get('id') ?? '';
      const resolve = pending.get(id);
      if (resolve) {
        pending.delete(id);
        resolve(msg.data);
      }
    },
  });
  let seq = 0;
  return (body) =>
    new Promise((resolve) => {
      const id = (++seq).toString(36);
      pending.set(id, (data) => resolve(JSON.parse(new TextDecoder().decode(data))));
      const h = headers();
      h.set('id', id);
      nc.publish('bench.raw', body, { reply: inbox, headers: h });
    });
}

/**
 * Bundles fixture programs into plain ES modules in a temporary folder with esbuild (tsx's compiler), so
 * the child processes run as a deployment would: no loader thread, no per-closure name helpers.
 */
async function bundleFixtures(
  names: readonly string[],
): Promise<{ files: Record<string, string>; remove: () => Promise<void> }> {
  const { build } = await import('esbuild');
  const dir = await mkdtemp(join(tmpdir(), 'toolbus-nats-bench-'));
  const files: Record<string, string> = {};
  for (const name of names) {
    files[name] = join(dir, `${name}.mjs`);
    await build({
      entryPoints: [join(root, `test/fixtures/${name}.ts`)],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile: files[name],
      logLevel: 'silent',
      // Some dependencies are CommonJS and call require().
      banner: {
        js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
      },
    });
  }
  return { files, remove: () => rm(dir, { recursive: true, force: true }) };
}

export default async function (): Promise<BenchTable[]> {
  const server = await startNatsServer({ jetstream: false });
  const bundled = await bundleFixtures(['nats-bench-responder', 'nats-replica', 'nats-agent']);
  // Both responders run as bundled JavaScript; the callers run in this process.
  const responder = child(bundled.files['nats-bench-responder']!, [server.url]);
  const replica = child(bundled.files['nats-replica']!, [server.url, 'bench-replica']);
  const rows: BenchRow[] = [];
  const notes: string[] = [];
  try {
    await Promise.all([responder.line((l) => l.ready === true), replica.line((l) => l.ready !== undefined)]);
    const nc = await connect({ servers: server.url, name: 'bench-raw' });
    const bus = await NatsBus.connect({ servers: server.url, name: 'bench-toolbus' });
    const client = new ToolServiceClient(bus, {
      requestQueue: LOAD_SERVICE['request-queue'],
      responseQueue: LOAD_SERVICE['response-queue'],
      timeoutMs: 30_000,
    });
    const own = ownReplyClient(nc);
    await nc.flush();
    let n = 0;
    const options = (concurrency: number) => ({
      concurrency,
      iterations: concurrency === 1 ? 5_000 : 60_000,
      maxMs: concurrency === 1 ? 1_000 : 1_500,
      warmup: concurrency === 1 ? 500 : 2_000,
    });
    const patterns: [string, () => Promise<unknown>][] = [
      [
        'raw nc.request()',
        async () => {
          const h = headers();
          h.set('id', String(++n));
          const msg = await nc.request('bench.raw', envelope(n), { timeout: 30_000, headers: h });
          return JSON.parse(msg.string());
        },
      ],
      ['raw own reply subject + id map', () => own(envelope(++n))],
      [
        'tool service over NatsBus',
        () =>
          client.call(USER, CONFIG, {
            n: ++n,
            delayMs: 0,
            topic: 'a topic of a reasonable length for a tool call',
          }),
      ],
    ];
    // The patterns take turns, two or three times, and each keeps its best round: this machine's noise (other
    // processes, CPU frequency) then hits every pattern alike instead of whichever ran at a bad moment.
    for (const concurrency of CONCURRENCY) {
      const best = new Map<string, BenchRow>();
      for (let round = 0; round < (ROUNDS[concurrency] ?? 2); round++) {
        for (const [name, fn] of patterns) {
          const row = await measure(name, fn, options(concurrency));
          const previous = best.get(name);
          if (!previous || row.opsPerSec > previous.opsPerSec) best.set(name, row);
        }
      }
      rows.push(...best.values());
    }
    await client.close();
    await bus.close();
    await nc.close();

    // The RSS of an idle agent process (ToolUseAgent, ToolServiceClient, NatsBus) connected to NATS: bundled
    // to plain JavaScript as a deployment runs it, and under tsx (whose loader thread adds its own heap).
    for (const [label, script, nodeArgs] of [
      ['bundled JavaScript', bundled.files['nats-agent']!, ['--expose-gc']],
      ['run through tsx', 'test/fixtures/nats-agent.ts', ['--expose-gc', '--import', 'tsx']],
    ] as const) {
      const agent = child(script, [server.url], [...nodeArgs]);
      await agent.line((l) => l.ready === true);
      await new Promise((r) => setTimeout(r, 500));
      agent.process.stdin!.write('{"op":"rss"}\n');
      const { rss } = (await agent.line((l) => l.reply === 'rss')) as { rss: number };
      await agent.stop();
      const mb = rss / 1024 / 1024;
      notes.push(
        label === 'bundled JavaScript'
          ? `Idle agent process connected to NATS (${label}): RSS ${mb.toFixed(1)} MB (target ≤ 80 MB: ${mb <= 80 ? 'met' : 'NOT met'}).`
          : `Idle agent process connected to NATS (${label}, development only): RSS ${mb.toFixed(1)} MB.`,
      );
    }
  } finally {
    await Promise.all([responder.stop(), replica.stop()]);
    await server.stop();
    await bundled.remove();
  }
  for (const concurrency of CONCURRENCY) {
    const at = (name: string): BenchRow | undefined =>
      rows.find((r) => r.name === name && r.concurrency === concurrency);
    const tool = at('tool service over NatsBus');
    const request = at('raw nc.request()');
    const ownRow = at('raw own reply subject + id map');
    if (!tool || !request || !ownRow) continue;
    const best = Math.max(request.opsPerSec, ownRow.opsPerSec);
    const vsBest = tool.opsPerSec / best;
    const vsRequest = tool.opsPerSec / request.opsPerSec;
    const p50 = tool.p50Us / ownRow.p50Us;
    // With one call in flight every pattern waits on the same round trip: nc.request()'s per-call CPU (the
    // cost the ≥ 2× target is about) is hidden in it, so the best raw pattern itself is the ceiling there.
    const ceiling = ownRow.opsPerSec / request.opsPerSec;
    notes.push(
      `${concurrency} in flight: throughput ${vsBest.toFixed(2)}× the best raw pattern (target ≥ 0.9: ${vsBest >= 0.9 ? 'met' : 'NOT met'}), ` +
        `${vsRequest.toFixed(2)}× nc.request() (target ≥ 2: ${vsRequest >= 2 ? 'met' : 'NOT met'}), ` +
        `p50 ${p50.toFixed(2)}× the own-reply pattern (target ≤ 1.2: ${p50 <= 1.2 ? 'met' : 'NOT met'}); ` +
        `the raw own-reply pattern itself is ${ceiling.toFixed(2)}× nc.request().`,
    );
  }
  return [
    {
      title:
        'NATS request/response: tool service over NatsBus vs the raw NATS client (responders in child processes)',
      baseline: 'raw own reply subject + id map',
      rows,
      notes,
    },
  ];
}
