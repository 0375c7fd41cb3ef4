/**
 * @module Benchmark: a flood of junk announcements against a live registry. One process holds, as
 * `toolbus up` does embedded, a `MemoryBus`, a `ToolRegistry` and a self-announcing `DynamicToolService`
 * with one good tool; the registry's `tools.call('good-tool')` runs every {@link CALL_EVERY_MS} ms
 * throughout. Cases, in this order in each process:
 *
 * - baseline: no flood, for {@link BASELINE_MS} ms;
 * - flood: {@link FLOOD} `announce` messages, each with its own service id and instance id and one
 *   tool, published from the same process in batches of {@link BATCH} (all of a batch is published,
 *   then the event loop gets one turn: as fast as `MemoryBus` takes them), with no `kind` property, so
 *   every subscriber has to read the body; absorbed when the last is delivered and `registry.refresh()`
 *   has built what was kept;
 * - heartbeats: the kept junk instances announce again, unchanged, {@link FLOOD} messages in all.
 *
 * Per case: the event-loop delay (`monitorEventLoopDelay`, {@link DELAY_RESOLUTION_MS} ms resolution; its
 * figures include that sampling interval, so an idle loop shows about 5 ms),
 * the good tool's call latency and failures, the time to absorb the messages, and the heap growth after
 * a forced GC. Targets: event-loop delay p99 under {@link TARGET_DELAY_P99_MS} ms and no failed call
 * during the flood. Each repeat is a fresh child process started with `--expose-gc`
 * (`ANNOUNCEMENTS_BENCH_REPEATS`, default {@link DEFAULT_REPEATS}).
 */
import { spawn } from 'node:child_process';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { DynamicToolService, MemoryBus, MemoryConfigStore, ToolRegistry } from '../src/index.js';
import { TOOL_DESCRIPTORS_TOPIC } from '../src/services/index.js';
import type { BenchTable } from './harness.js';
import type { TextTable } from './run.js';

const FLOOD = 100_000;
/** Messages delivered per event-loop turn: about what one 64 KiB socket read of a bus carries here. */
const BATCH = 200;
const CALL_EVERY_MS = 50;
const BASELINE_MS = 3_000;
const DELAY_RESOLUTION_MS = 5;
const TARGET_DELAY_P99_MS = 50;
const DEFAULT_REPEATS = 2;
const CHILD_ENV = 'TOOLBUS_ANNOUNCEMENTS_BENCH_CHILD';

const CASES = {
  baseline: `baseline: no flood (${BASELINE_MS / 1000} s)`,
  flood: `flood: ${FLOOD.toLocaleString('en-US')} junk services, one instance and one tool each`,
  heartbeats: `heartbeats: ${FLOOD.toLocaleString('en-US')} unchanged repeats of the kept junk instances`,
} as const;
type Case = keyof typeof CASES;

interface Sample {
  /** Null for the baseline. */
  absorbedMs: number | null;
  delayP50Ms: number;
  delayP99Ms: number;
  delayMaxMs: number;
  calls: number;
  failures: number;
  callP50Ms: number;
  callP99Ms: number;
  heapGrowthBytes: number;
  /** After the case: junk services and junk tools the registry keeps, and its problems. */
  junkServices: number;
  junkTools: number;
  problems: number;
}
type Results = Record<Case, Sample>;

const gc = (globalThis as { gc?: () => void }).gc;

function heapUsed(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
}

/** A junk announcement: service `junk-<i>`, instance `junk-<i>-1`, one tool. */
function junk(i: number): string {
  const id = `junk-${i}`;
  return JSON.stringify({
    kind: 'announce',
    instance: `${id}-1`,
    'ttl-ms': 600_000,
    service: { id, 'request-queue': `request:tg:${id}`, 'response-queue': `response:tg:${id}` },
    tools: [{ name: `junk-tool-${i}`, description: 'junk', arguments: [{ name: 'x', type: 'string' }] }],
  });
}

/** Runs `work` (or waits {@link BASELINE_MS}) while calling the good tool every {@link CALL_EVERY_MS} ms. */
async function measureCase(registry: ToolRegistry, work: (() => Promise<void>) | undefined): Promise<Sample> {
  const heapBefore = heapUsed();
  const delay = monitorEventLoopDelay({ resolution: DELAY_RESOLUTION_MS });
  const latencies: number[] = [];
  const inFlight = new Set<Promise<void>>();
  let calls = 0;
  let failures = 0;
  delay.enable();
  const timer = setInterval(() => {
    calls++;
    const started = performance.now();
    const call = registry.tools.call('good-tool', { topic: 'floods' }).then(
      (result) => {
        latencies.push(performance.now() - started);
        if (result.isError || result.content !== 'good: floods') failures++;
      },
      () => void failures++,
    );
    inFlight.add(call);
    void call.finally(() => inFlight.delete(call));
  }, CALL_EVERY_MS);
  const t0 = performance.now();
  if (work) await work();
  else await new Promise((resolve) => setTimeout(resolve, BASELINE_MS));
  const absorbedMs = performance.now() - t0;
  clearInterval(timer);
  await Promise.all(inFlight);
  delay.disable();
  latencies.sort((a, b) => a - b);
  const counts = registry.announcedInstances();
  return {
    absorbedMs: work ? absorbedMs : null,
    delayP50Ms: delay.percentile(50) / 1e6,
    delayP99Ms: delay.percentile(99) / 1e6,
    delayMaxMs: delay.max / 1e6,
    calls,
    failures,
    callP50Ms: percentile(latencies, 0.5),
    callP99Ms: percentile(latencies, 0.99),
    heapGrowthBytes: heapUsed() - heapBefore,
    junkServices: [...counts.keys()].filter((id) => id.startsWith('junk-')).length,
    junkTools: registry.tools.list().filter((t) => t.name.startsWith('junk-')).length,
    problems: registry.problems().length,
  };
}

/** Publishes `count` bodies, {@link BATCH} at a time with one event-loop turn between batches. */
async function publishAll(bus: MemoryBus, count: number, body: (i: number) => string): Promise<void> {
  for (let i = 0; i < count; i += BATCH) {
    for (let j = i; j < Math.min(count, i + BATCH); j++) void bus.publish(TOOL_DESCRIPTORS_TOPIC, body(j));
    await tick();
  }
  await tick();
}

/** The child's work: the three cases, in order, on one registry. */
async function measureAll(): Promise<Results> {
  const bus = new MemoryBus();
  const registry = new ToolRegistry({ store: new MemoryConfigStore(), bus });
  const service = new DynamicToolService({
    bus,
    id: 'good-service',
    topic: 'good',
    invoke: (_user, _config, args) => `good: ${String(args['topic'])}`,
    announce: {
      tools: [
        { name: 'good-tool', description: 'A good tool', arguments: [{ name: 'topic', type: 'string' }] },
      ],
    },
  });
  await service.start();
  await registry.start();
  while (!registry.tools.get('good-tool')) await tick();
  // Warm the call path (and the JIT) before anything is measured.
  for (let i = 0; i < 200; i++) await registry.tools.call('good-tool', { topic: 'warm-up' });

  const baseline = await measureCase(registry, undefined);
  const flood = await measureCase(registry, async () => {
    await publishAll(bus, FLOOD, junk);
    await registry.refresh();
  });
  const kept = flood.junkServices;
  const heartbeats = await measureCase(registry, async () => {
    // The kept ones are the first to arrive (junk-0 … junk-<kept - 1>).
    await publishAll(bus, FLOOD, (i) => junk(i % kept));
    await registry.refresh();
  });
  await registry.close();
  await service.stop();
  await bus.close();
  return { baseline, flood, heartbeats };
}

if (process.env[CHILD_ENV] === '1') {
  if (!gc) throw new Error('announcements bench: run with --expose-gc');
  process.stdout.write(`${JSON.stringify(await measureAll())}\n`);
  process.exit(0);
}

function runChild(): Promise<Results> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url)],
      { env: { ...process.env, [CHILD_ENV]: '1' }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`announcements bench: the child exited with ${code}`));
      else resolve(JSON.parse(out) as Results);
    });
  });
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** "median (min–max)" of one figure over the repeats. */
function spread(values: readonly (number | null)[], digits = 1): string {
  if (values.some((v) => v === null)) return '-';
  return spreadOf(values as number[], digits);
}

function spreadOf(values: readonly number[], digits: number): string {
  const f = (v: number): string => v.toFixed(digits);
  return values.length === 1
    ? f(values[0]!)
    : `${f(median(values))} (${f(Math.min(...values))}–${f(Math.max(...values))})`;
}

export default async function (): Promise<(BenchTable | TextTable)[]> {
  const repeats = Number(process.env['ANNOUNCEMENTS_BENCH_REPEATS'] ?? DEFAULT_REPEATS);
  const runs: Results[] = [];
  for (let i = 0; i < repeats; i++) runs.push(await runChild());
  const of = (kind: Case, pick: (s: Sample) => number): number[] => runs.map((r) => pick(r[kind]));
  const rows = (Object.keys(CASES) as Case[]).map((kind) => [
    CASES[kind],
    spread(
      runs.map((r) => r[kind].absorbedMs).map((ms) => (ms === null ? null : ms / 1000)),
      2,
    ),
    spread(of(kind, (s) => s.delayP50Ms)),
    spread(of(kind, (s) => s.delayP99Ms)),
    spread(of(kind, (s) => s.delayMaxMs)),
    of(kind, (s) => s.calls).join(' / '),
    of(kind, (s) => s.failures).join(' / '),
    spread(
      of(kind, (s) => s.callP50Ms),
      2,
    ),
    spread(
      of(kind, (s) => s.callP99Ms),
      2,
    ),
    spread(of(kind, (s) => s.heapGrowthBytes / 2 ** 20)),
  ]);
  const floodP99 = Math.max(...of('flood', (s) => s.delayP99Ms), ...of('heartbeats', (s) => s.delayP99Ms));
  const floodFailures = of('flood', (s) => s.failures).reduce((a, b) => a + b, 0);
  const last = runs[runs.length - 1]!;
  return [
    {
      title: `Registry under a flood of ${FLOOD.toLocaleString('en-US')} junk announcements (MemoryBus, one process)`,
      columns: [
        'case',
        'absorbed in s',
        'loop delay p50 ms',
        'loop delay p99 ms',
        'loop delay max ms',
        'good-tool calls',
        'failed calls',
        'call p50 ms',
        'call p99 ms',
        'heap growth MB',
      ],
      rows,
      notes: [
        `Median (min–max) over ${repeats} child processes; calls and failures per process. The flood is ` +
          `published from the registry's own process, ${BATCH} messages per event-loop turn, without a ` +
          `\`kind\` property; the good tool is called every ${CALL_EVERY_MS} ms throughout.`,
        `After the flood the registry kept ${last.flood.junkServices.toLocaleString('en-US')} junk services and ` +
          `${last.flood.junkTools.toLocaleString('en-US')} junk tools (the default caps) and listed ` +
          `${last.flood.problems} problems; the rest were refused and counted.`,
        `Target: event-loop delay p99 under ${TARGET_DELAY_P99_MS} ms during the flood and the heartbeats ` +
          `(worst ${floodP99.toFixed(1)} ms: ${floodP99 < TARGET_DELAY_P99_MS ? 'met' : 'NOT met'}), and the good ` +
          `tool callable (${floodFailures} failed calls: ${floodFailures === 0 ? 'met' : 'NOT met'}).`,
      ],
    },
  ];
}
