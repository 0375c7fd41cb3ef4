/**
 * @module Durable tool-service calls over NATS: `ToolServiceClient.call()` to a `DynamicToolService` with
 * `delivery: 'durable'` (the request queued on a JetStream work-queue stream, the call's states kept in the
 * JetStream KV call store, the delivery acked once its outcome is stored) against the same call with plain
 * request/response delivery (NATS core), at 1 and at 64 calls in flight. Starts its own nats-server with
 * JetStream; both services (trivial `invoke`, `concurrency: 64`) run in a child process on their own
 * connection (bench/fixtures/durable-service.ts, bundled to plain JavaScript as a deployment runs it), the
 * clients in this process on another.
 *
 * Method: each contender is warmed up first (the first durable call opens JetStream from the client and
 * finds the stream the service made; it is timed on its own). Then, at each concurrency, the two take
 * turns in {@link ROUNDS} rounds of {@link ROUND_MS} each, the order reversed every other round (plain,
 * durable, durable, plain, …), so the machine's noise and what one contender leaves behind hit both
 * alike. At 1 in flight the calls are sequential; at 64, 64 workers each loop on their own call. The
 * table shows each contender's median round; the notes give the median of the per-round durable ÷ plain
 * ratios with their spread (min–max over the rounds).
 * Target: durable p50 ≤ 3× plain at 1 in flight.
 *
 * Run only this bench with `npm run bench -- durable`; `BENCH_DURABLE_IN_FLIGHT=1` (or `64`) measures one
 * concurrency alone.
 */
import { readFileSync } from 'node:fs';
import { NatsBus } from '../src/bus/nats/index.js';
import { ToolServiceClient } from '../src/services/index.js';
import { startNatsServer } from '../test/support/nats-server.js';
import { measure, type BenchRow, type BenchTable } from './harness.js';
import { bundleFixtures, median, ratioSpread, startJsonChild } from './child-process.js';
import type { TextTable } from './run.js';

const CONCURRENCY = (process.env['BENCH_DURABLE_IN_FLIGHT'] ?? '1,64')
  .split(',')
  .map(Number)
  .filter((n) => Number.isInteger(n) && n > 0);
/** Interleaved rounds at each concurrency (each contender runs once per round). */
const ROUNDS: Record<number, number> = { 1: 10, 64: 6 };
/** How long one contender runs in one round. */
const ROUND_MS: Record<number, number> = { 1: 500, 64: 1_000 };
/** How long each contender runs untimed at a concurrency before its first round. */
const WARMUP_MS = 400;
/** A pause after each contender's turn: a durable call's last store write and ack finish after its reply. */
const SETTLE_MS = 100;
/** The target of durable p50 ÷ plain p50 at 1 in flight. */
const P50_TARGET = 3;

const PLAIN = 'plain (request/response, NATS core)';
const DURABLE = 'durable (JetStream queue + KV call store)';
const QUEUES = {
  [PLAIN]: { requestQueue: 'request:tg:bench-plain', responseQueue: 'response:tg:bench-plain' },
  [DURABLE]: { requestQueue: 'request:tg:bench-durable', responseQueue: 'response:tg:bench-durable' },
} as const;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The CPU time nats-server has used, in microseconds (Linux `/proc`; NaN elsewhere). */
function serverCpuUs(pid: number): number {
  try {
    // Fields after the command name: state is the first, utime and stime the 12th and 13th.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS_PER_S;
  } catch {
    return NaN;
  }
}
/** Linux's USER_HZ: /proc times are in these ticks. */
const CLOCK_TICKS_PER_S = 100;

/** Call-store operations of the durable service (see bench/fixtures/durable-service.ts). */
interface StoreOps {
  put: number;
  putConflict: number;
  get: number;
  claim: number;
}

/** Cumulative counters at one moment, or their difference over a span. */
interface Usage {
  calls: number;
  clientUs: number;
  serviceUs: number;
  serverUs: number;
  store: StoreOps;
}

function addUsage(into: Usage, before: Usage, after: Usage): void {
  into.calls += after.calls - before.calls;
  into.clientUs += after.clientUs - before.clientUs;
  into.serviceUs += after.serviceUs - before.serviceUs;
  into.serverUs += after.serverUs - before.serverUs;
  for (const key of Object.keys(into.store) as (keyof StoreOps)[]) {
    into.store[key] += after.store[key] - before.store[key];
  }
}

function emptyUsage(): Usage {
  return {
    calls: 0,
    clientUs: 0,
    serviceUs: 0,
    serverUs: 0,
    store: { put: 0, putConflict: 0, get: 0, claim: 0 },
  };
}

/** Per-round durable ÷ plain ratios at one concurrency. */
interface Ratios {
  p50: number[];
  p99: number[];
  opsPerSec: number[];
}

export default async function (): Promise<(BenchTable | TextTable)[]> {
  const server = await startNatsServer({ jetstream: true });
  const bundled = await bundleFixtures({ 'durable-service': 'bench/fixtures/durable-service.ts' }, [
    'durable-service',
  ]).catch(async (error: unknown) => {
    await server.stop();
    throw error;
  });
  const service = startJsonChild(bundled.files['durable-service']!, [server.url], [], 5_000);
  const rows: BenchRow[] = [];
  const notes: string[] = [];
  const ratioRows: string[][] = [];
  const cpuRows: string[][] = [];
  let bus: NatsBus | undefined;
  const clients: ToolServiceClient[] = [];
  try {
    await service.line((l) => l.ready === true);
    bus = await NatsBus.connect({ servers: server.url, name: 'bench-durable-client' });
    const plain = new ToolServiceClient(bus, { ...QUEUES[PLAIN], timeoutMs: 30_000 });
    const durable = new ToolServiceClient(bus, {
      ...QUEUES[DURABLE],
      timeoutMs: 30_000,
      delivery: 'durable',
    });
    clients.push(plain, durable);
    const calls = { [PLAIN]: 0, [DURABLE]: 0 };
    const contenders: (readonly [typeof PLAIN | typeof DURABLE, () => Promise<unknown>])[] = [
      [
        PLAIN,
        () => {
          calls[PLAIN]++;
          return plain.call('u', {}, {});
        },
      ],
      [
        DURABLE,
        () => {
          calls[DURABLE]++;
          return durable.call('u', {}, {});
        },
      ],
    ];
    /** The counters of `name` and of the processes now (the service's CPU and store operations asked for). */
    const usage = async (name: typeof PLAIN | typeof DURABLE): Promise<Usage> => {
      service.send({ op: 'stats' });
      const stats = (await service.line((l) => l.reply === 'stats')) as { cpuUs: number; store: StoreOps };
      const client = process.cpuUsage();
      return {
        calls: calls[name],
        clientUs: client.user + client.system,
        serviceUs: stats.cpuUs,
        serverUs: serverCpuUs(server.pid),
        store: stats.store,
      };
    };

    // The first call of each: the durable one opens JetStream from the client and finds the stream.
    const first: string[] = [];
    for (const [name, fn] of contenders) {
      const t0 = performance.now();
      await fn();
      first.push(`${name === PLAIN ? 'plain' : 'durable'} ${(performance.now() - t0).toFixed(1)} ms`);
    }
    notes.push(`First call (cold, not in the table): ${first.join(', ')}.`);

    for (const concurrency of CONCURRENCY) {
      const rounds = ROUNDS[concurrency] ?? 6;
      const roundMs = ROUND_MS[concurrency] ?? 1_000;
      for (const [name, fn] of contenders) {
        await measure(name, fn, { concurrency, iterations: 1_000_000, maxMs: WARMUP_MS, warmup: 0 });
        await sleep(SETTLE_MS);
      }
      const byName = new Map<string, BenchRow[]>(contenders.map(([name]) => [name, []]));
      const used = new Map<string, Usage>(contenders.map(([name]) => [name, emptyUsage()]));
      const ratios: Ratios = { p50: [], p99: [], opsPerSec: [] };
      for (let round = 0; round < rounds; round++) {
        const order = round % 2 === 0 ? contenders : [...contenders].reverse();
        const measured = new Map<string, BenchRow>();
        for (const [name, fn] of order) {
          const before = await usage(name);
          const row = await measure(name, fn, {
            concurrency,
            iterations: 1_000_000,
            maxMs: roundMs,
            // Warmed up above; a few calls only bring the connection back from the pause.
            warmup: 10,
          });
          measured.set(name, row);
          byName.get(name)!.push(row);
          // The pause is counted: the store writes and acks after the last replies are the call's work.
          await sleep(SETTLE_MS);
          addUsage(used.get(name)!, before, await usage(name));
        }
        const p = measured.get(PLAIN)!;
        const d = measured.get(DURABLE)!;
        ratios.p50.push(d.p50Us / p.p50Us);
        ratios.p99.push(d.p99Us / p.p99Us);
        ratios.opsPerSec.push(d.opsPerSec / p.opsPerSec);
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
      for (const [name, u] of used) {
        const per = (us: number): string => (Number.isFinite(us) ? (us / u.calls).toFixed(0) : '-');
        const ops = (n: number): string => (n / u.calls).toFixed(2);
        cpuRows.push([
          String(concurrency),
          name,
          per(u.clientUs),
          per(u.serviceUs),
          per(u.serverUs),
          per(u.clientUs + u.serviceUs + u.serverUs),
          name === PLAIN
            ? '-'
            : `put ${ops(u.store.put)} + ${ops(u.store.putConflict)} conflicting, get ${ops(u.store.get)}, claim ${ops(u.store.claim)}`,
        ]);
      }
      const p50 = median(ratios.p50);
      const target =
        concurrency === 1 ? `≤ ${P50_TARGET}×: ${p50 <= P50_TARGET ? 'met' : 'NOT met'}` : 'none';
      ratioRows.push([
        String(concurrency),
        String(rounds),
        ratioSpread(ratios.p50),
        ratioSpread(ratios.p99),
        ratioSpread(ratios.opsPerSec),
        target,
      ]);
    }

    service.send({ op: 'stats' });
    const stats = (await service.line((l) => l.reply === 'stats')) as {
      durable: { received: number; completed: number; failed: number; rejected: number };
      problems: number;
    };
    const c = durable.stats();
    notes.push(
      `Durable calls: client sent ${c.sent}, completed ${c.completed}, failed ${c.failed}, timed out ` +
        `${c.timedOut}, unavailable ${c.unavailable}; service received ${stats.durable.received}, completed ` +
        `${stats.durable.completed}, rejected ${stats.durable.rejected}; store or queue problems: ${stats.problems}.`,
    );
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await bus?.close().catch(() => undefined);
    await service.stop();
    await server.stop();
    await bundled.remove();
  }
  return [
    {
      title:
        'Durable tool-service calls vs plain request/response over NATS (service in a child process, nats-server with JetStream)',
      baseline: PLAIN,
      rows,
      notes: [
        `Each row is the median of its contender's interleaved rounds (${CONCURRENCY.map((n) => `${ROUNDS[n] ?? 6} × ${ROUND_MS[n] ?? 1_000} ms at ${n} in flight`).join(', ')}).`,
        ...notes,
      ],
    },
    {
      title: 'Durable ÷ plain, per-round ratios: median (min–max over the rounds)',
      columns: ['in flight', 'rounds', 'p50 latency', 'p99 latency', 'throughput', 'target (p50)'],
      rows: ratioRows,
      notes: [
        'Latency ratios above 1 and throughput ratios below 1 are the cost of durability: a JetStream publish ' +
          'acknowledged by the server, a pull delivery, and the call-store writes and the ack that hold a ' +
          "consumer slot until they finish (the caller's reply does not wait for them).",
      ],
    },
    {
      title:
        "CPU time per call (µs) over the rounds, by process, and the durable service's call-store operations per call",
      columns: [
        'in flight',
        'case',
        'client process',
        'service process',
        'nats-server',
        'total',
        'store ops per call',
      ],
      rows: cpuRows,
      notes: [
        'Process CPU (user + system) from the start of each turn to the end of the pause after it, divided by ' +
          "the calls made (warm-up calls included); nats-server's from /proc, in 10 ms ticks. The machine's " +
          'cores are shared by the three processes: where their total nears the cores × wall time, the ' +
          'calls are CPU-bound.',
      ],
    },
  ];
}
