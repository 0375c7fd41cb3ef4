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
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { NatsBus } from '../src/bus/nats/index.js';
import { ToolServiceClient } from '../src/services/index.js';
import { startNatsServer } from '../test/support/nats-server.js';
import { measure, type BenchRow, type BenchTable } from './harness.js';
import type { TextTable } from './run.js';

const root = new URL('..', import.meta.url).pathname;
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

interface ChildHandle {
  process: ChildProcess;
  line(match: (l: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  send(op: Record<string, unknown>): void;
  stop(): Promise<void>;
}

/** A child process speaking JSON lines on stdout (as in nats.bench.ts). */
function child(script: string, args: string[]): ChildHandle {
  const proc = spawn(process.execPath, [script, ...args], { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] });
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
    send: (op) => proc.stdin!.write(JSON.stringify(op) + '\n'),
    stop: async () => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Bundles the service fixture into a plain ES module with esbuild (as nats.bench.ts does its responders):
 * the NATS client stays the installed package, loaded from node_modules (the bundle sits in
 * node_modules/.cache to find it), so `NatsBus` takes the same path as in a deployment.
 */
async function bundleService(): Promise<{ file: string; remove: () => Promise<void> }> {
  const { build } = await import('esbuild');
  const cache = join(root, 'node_modules', '.cache');
  await mkdir(cache, { recursive: true });
  const dir = await mkdtemp(join(cache, 'toolbus-durable-bench-'));
  const file = join(dir, 'durable-service.mjs');
  try {
    await build({
      entryPoints: [join(root, 'bench/fixtures/durable-service.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile: file,
      logLevel: 'silent',
      external: ['@nats-io/*'],
      // Some dependencies are CommonJS and call require().
      banner: {
        js: "import { createRequire as __benchRequire } from 'node:module'; const require = __benchRequire(import.meta.url);",
      },
    });
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return { file, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** The median of some numbers (the upper one of the middle two for an even count). */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
}

/** `median× (min–max)` of per-round ratios. */
function spread(values: readonly number[]): string {
  return `${median(values).toFixed(2)}× (${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)})`;
}

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
  const bundled = await bundleService().catch(async (error: unknown) => {
    await server.stop();
    throw error;
  });
  const service = child(bundled.file, [server.url]);
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
        spread(ratios.p50),
        spread(ratios.p99),
        spread(ratios.opsPerSec),
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
