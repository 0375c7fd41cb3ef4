/**
 * @module NATS request/response: a tool-service call over `NatsBus` (ToolServiceClient → DynamicToolService
 * in another process) against the raw NATS client doing the same JSON work, with `nc.request()` and with
 * its own reply subject and an id map, each at 1, 64 and 512 calls in flight. Starts its own nats-server.
 *
 * Method: at each concurrency the three patterns take turns in rounds, each round in another of the six
 * orders (A B C, C B A, B C A, …), so the machine's noise (other processes, CPU frequency) and whatever a
 * pattern leaves behind for the next one hit each alike. The table shows each pattern's median round; the
 * notes give the median of the per-round ratios against the raw own-reply pattern, with their spread
 * (min–max over the rounds).
 * Targets: tool-service throughput ≥ 0.95× the raw own-reply pattern at every concurrency and ≥ 2×
 * `nc.request()` at 64 and 512 in flight, p50 ≤ 1.2× the raw own-reply pattern; RSS of an idle agent
 * process connected to NATS ≤ 80 MB.
 */
import { connect, createInbox, headers, type NatsConnection } from '@nats-io/transport-node';
import { NatsBus } from '../src/bus/nats/index.js';
import { ToolServiceClient } from '../src/services/index.js';
import { startNatsServer } from '../test/support/nats-server.js';
import { LOAD_SERVICE } from '../test/fixtures/nats-load-descriptors.js';
import { measure, type BenchRow, type BenchTable } from './harness.js';
import { bundleFixtures, median, ratioSpread, startJsonChild } from './child-process.js';

// BENCH_NATS_IN_FLIGHT=1 (or 1,64) measures only those, e.g. to repeat the 1-in-flight figure alone.
const CONCURRENCY = (process.env.BENCH_NATS_IN_FLIGHT ?? '1,64,512')
  .split(',')
  .map(Number)
  .filter((n) => Number.isInteger(n) && n > 0);
/** Interleaved rounds at each concurrency (short sequential rounds get more). */
const ROUNDS: Record<number, number> = { 1: 36, 64: 12, 512: 12 };
/** How long one pattern runs in one round. */
const ROUND_MS: Record<number, number> = { 1: 400, 64: 500, 512: 600 };
/**
 * The orders of the three patterns, one per round in turn: each pattern runs first, second and last
 * equally often and after each other pattern equally often (A B C, C B A, B C A, A C B, C A B, B A C).
 */
const ORDERS: readonly (readonly number[])[] = [
  [0, 1, 2],
  [2, 1, 0],
  [1, 2, 0],
  [0, 2, 1],
  [2, 0, 1],
  [1, 0, 2],
];
const RAW_REQUEST = 'raw nc.request()';
const RAW_OWN = 'raw own reply subject + id map';
const TOOL = 'tool service over NatsBus';
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

export default async function (): Promise<BenchTable[]> {
  const server = await startNatsServer({ jetstream: false });
  // Both responders run as bundled JavaScript on the installed NATS client; the callers run in this
  // process. The idle agent is one file, as in the earlier RSS figures.
  const bundled = await bundleFixtures(
    {
      'nats-bench-responder': 'test/fixtures/nats-bench-responder.ts',
      'nats-replica': 'test/fixtures/nats-replica.ts',
      'nats-agent': 'test/fixtures/nats-agent.ts',
    },
    ['nats-bench-responder', 'nats-replica'],
  );
  const responder = startJsonChild(bundled.files['nats-bench-responder']!, [server.url]);
  const replica = startJsonChild(bundled.files['nats-replica']!, [server.url, 'bench-replica']);
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
    const patterns: [string, () => Promise<unknown>][] = [
      [
        RAW_REQUEST,
        async () => {
          const h = headers();
          h.set('id', String(++n));
          const msg = await nc.request('bench.raw', envelope(n), { timeout: 30_000, headers: h });
          return JSON.parse(msg.string());
        },
      ],
      [RAW_OWN, () => own(envelope(++n))],
      [
        TOOL,
        () =>
          client.call(USER, CONFIG, {
            n: ++n,
            delayMs: 0,
            topic: 'a topic of a reasonable length for a tool call',
          }),
      ],
    ];
    for (const concurrency of CONCURRENCY) {
      const rounds = ROUNDS[concurrency] ?? 6;
      const byName = new Map<string, BenchRow[]>(patterns.map(([name]) => [name, []]));
      const vsOwn: number[] = [];
      const vsRequest: number[] = [];
      const p50VsOwn: number[] = [];
      for (let round = 0; round < rounds; round++) {
        const order = ORDERS[round % ORDERS.length]!.map((i) => patterns[i]!);
        const measured = new Map<string, BenchRow>();
        for (const [name, fn] of order) {
          const row = await measure(name, fn, {
            concurrency,
            iterations: 1_000_000,
            maxMs: ROUND_MS[concurrency] ?? 1_000,
            // The first round warms each pattern up; later rounds only refill the pipeline.
            warmup: round === 0 ? (concurrency === 1 ? 500 : 2_000) : concurrency === 1 ? 20 : 200,
          });
          measured.set(name, row);
          byName.get(name)!.push(row);
        }
        const tool = measured.get(TOOL)!;
        const ownRow = measured.get(RAW_OWN)!;
        vsOwn.push(tool.opsPerSec / ownRow.opsPerSec);
        vsRequest.push(tool.opsPerSec / measured.get(RAW_REQUEST)!.opsPerSec);
        p50VsOwn.push(tool.p50Us / ownRow.p50Us);
      }
      for (const [name, measuredRows] of byName) {
        rows.push({
          name,
          concurrency,
          opsPerSec: median(measuredRows.map((r) => r.opsPerSec)),
          p50Us: median(measuredRows.map((r) => r.p50Us)),
          p99Us: median(measuredRows.map((r) => r.p99Us)),
        });
      }
      const tput = median(vsOwn);
      const request = median(vsRequest);
      const p50 = median(p50VsOwn);
      // With one call in flight every pattern waits on the same round trip: nc.request()'s per-call CPU
      // (the cost the ≥ 2× target is about) is hidden in it, so that target applies from 64 in flight.
      const requestTarget = concurrency === 1 ? '' : ` (target ≥ 2: ${request >= 2 ? 'met' : 'NOT met'})`;
      notes.push(
        `${concurrency} in flight, ${rounds} interleaved rounds (median, min–max): throughput ` +
          `${ratioSpread(vsOwn)} the raw own-reply pattern (target ≥ 0.95: ${tput >= 0.95 ? 'met' : 'NOT met'}), ` +
          `${ratioSpread(vsRequest)} nc.request()${requestTarget}, p50 ${ratioSpread(p50VsOwn)} the own-reply ` +
          `pattern (target ≤ 1.2: ${p50 <= 1.2 ? 'met' : 'NOT met'}).`,
      );
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
      const agent = startJsonChild(script, [server.url], [...nodeArgs]);
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
  return [
    {
      title:
        'NATS request/response: tool service over NatsBus vs the raw NATS client (responders in child processes)',
      baseline: RAW_OWN,
      rows,
      notes,
    },
  ];
}
