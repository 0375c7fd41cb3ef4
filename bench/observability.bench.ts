/**
 * @module Benchmark: the cost of observability. Tracing (the OpenTelemetry SDK registered, every span
 * sampled and handed to a batch processor whose exporter drops it) plus the Prometheus metrics hooks,
 * against both off, for `ToolSet.call` of a zod `FunctionTool` (1 in flight) and for a tool-service
 * call over NATS (`ToolServiceClient` → `DynamicToolService`, 64 in flight, own nats-server).
 *
 * A registered tracer provider is process-wide, so each contender runs in a child process of its own;
 * each round runs one child per mode (off, metrics only, tracing only, both) in a rotated order, so that
 * the machine's noise hits all alike, and gives one ratio per mode against off. Target: both on is at
 * most 10% slower (ratio of p50 for ToolSet.call, of throughput for NATS).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Tracer } from '@opentelemetry/api';
import type { BenchRow, BenchTable } from './harness.js';

const CHILD_ENV = 'TOOLBUS_OBSERVABILITY_BENCH';
const PAIRS = 6;
const TOOL_MS = 1_500;
const NATS_MS = 1_500;
const NATS_IN_FLIGHT = 64;

/**
 * `metrics` and `tracing` alone tell the two costs apart; `on` is both, the figure of the target.
 * `sdk-floor` (ToolSet.call only) is what any instrumentation with the SDK pays: one bare SDK span with
 * its context made active around the untraced call (toolbus's own tracing stays off).
 */
type Mode = 'off' | 'metrics' | 'tracing' | 'on' | 'sdk-floor';
type Case = 'tools' | 'nats';
const MODES: Readonly<Record<Case, readonly Mode[]>> = {
  tools: ['off', 'metrics', 'tracing', 'on', 'sdk-floor'],
  nats: ['off', 'metrics', 'tracing', 'on'],
};

/** What one child measured. */
interface ChildResult {
  opsPerSec: number;
  p50Us: number;
  p99Us: number;
  spans: number;
}

/**
 * Starts the OpenTelemetry SDK as `toolbus up` does when an endpoint is set, with a dropping exporter:
 * the context manager always, the tracer provider registered globally only with `register`.
 */
async function startTracing(register: boolean): Promise<{
  spans: () => number;
  stop: () => Promise<void>;
  tracer: Tracer;
}> {
  const { context, trace } = await import('@opentelemetry/api');
  const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
  const { BatchSpanProcessor, TracerProvider } = await import('@opentelemetry/sdk-trace');
  let exported = 0;
  const exporter = {
    export(spans: readonly unknown[], done: (result: { code: number }) => void): void {
      exported += spans.length;
      done({ code: 0 });
    },
    shutdown: () => Promise.resolve(),
  };
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  // Every span is kept and exported (a queue big enough for this load, exported often): the default
  // 2,048-span queue would drop most of them here and understate the cost.
  const processor = new BatchSpanProcessor({
    exporter,
    maxQueueSize: 1 << 17,
    maxExportBatchSize: 4_096,
    scheduledDelayMillis: 200,
  });
  const provider = new TracerProvider({ spanProcessors: [processor] });
  if (register) trace.setGlobalTracerProvider(provider);
  return {
    tracer: provider.getTracer('bench'),
    spans: () => exported,
    stop: async () => {
      await provider.forceFlush();
      await provider.shutdown();
    },
  };
}

async function runChild(kind: Case, mode: Mode, natsUrl: string | undefined): Promise<ChildResult> {
  const { measure } = await import('./harness.js');
  const { z } = await import('zod');
  const { FunctionTool, ToolSet, DynamicToolService, ToolServiceClient } = await import('../src/index.js');
  const { ToolbusMetrics } = await import('../src/observability/index.js');
  const tracing =
    mode === 'on' || mode === 'tracing' || mode === 'sdk-floor'
      ? await startTracing(mode !== 'sdk-floor')
      : undefined;
  const metrics =
    mode === 'on' || mode === 'metrics' ? new ToolbusMetrics({ defaultMetrics: false }) : undefined;
  await metrics?.load();
  let row: BenchRow;
  if (kind === 'tools') {
    const add = async ({ a, b }: { a: number; b: number }): Promise<{ sum: number }> => ({ sum: a + b });
    const schema = z.object({ a: z.number().describe('First'), b: z.number().describe('Second') });
    const tool = new FunctionTool(add, { name: 'add', description: 'Adds two numbers.', parameters: schema });
    const set = new ToolSet([tool], metrics ? { hooks: metrics.toolSetHooks() } : {});
    metrics?.observeToolSet(set);
    const result = await set.call('add', '{"a": 1, "b": 2}');
    if (result.isError) throw new Error(`observability bench: ${result.content}`);
    let run = (): Promise<unknown> => set.call('add', '{"a": 1, "b": 2}');
    if (mode === 'sdk-floor') {
      const { context, trace } = await import('@opentelemetry/api');
      const tracer = tracing!.tracer;
      const call = run;
      run = () => {
        const span = tracer.startSpan('execute_tool add');
        return context.with(trace.setSpan(context.active(), span), call).then((result) => {
          span.end();
          return result;
        });
      };
    }
    row = await measure(`ToolSet.call, ${mode}`, run, {
      iterations: 5_000_000,
      maxMs: TOOL_MS,
      warmup: 20_000,
    });
    if (metrics) await metrics.scrape();
  } else {
    const { NatsBus } = await import('../src/bus/nats/index.js');
    const serviceBus = await NatsBus.connect({ servers: natsUrl! });
    const clientBus = await NatsBus.connect({ servers: natsUrl! });
    const service = new DynamicToolService({
      bus: serviceBus,
      topic: 'obs',
      concurrency: 1_000,
      invoke: async (user, _config, args) => JSON.stringify({ user, n: args.n }),
    });
    await service.start();
    metrics?.observeServices(() => [service]);
    metrics?.observeBus(clientBus);
    const client = new ToolServiceClient(clientBus, {
      requestQueue: 'non-persistent://tg/request/obs',
      responseQueue: 'non-persistent://tg/response/obs',
      timeoutMs: 30_000,
    });
    let n = 0;
    row = await measure(
      `tool service over NATS, ${mode}`,
      () => client.call('alice', { style: 'pun' }, { n: ++n }),
      {
        concurrency: NATS_IN_FLIGHT,
        iterations: 5_000_000,
        maxMs: NATS_MS,
        warmup: 2_000,
      },
    );
    if (metrics) await metrics.scrape();
    await client.close();
    await service.stop();
    await clientBus.close();
    await serviceBus.close();
  }
  await tracing?.stop();
  return { opsPerSec: row.opsPerSec, p50Us: row.p50Us, p99Us: row.p99Us, spans: tracing?.spans() ?? 0 };
}

if (process.env[CHILD_ENV]) {
  const [kind, mode, natsUrl] = process.env[CHILD_ENV].split(' ') as [Case, Mode, string | undefined];
  process.stdout.write(`${JSON.stringify(await runChild(kind, mode, natsUrl))}\n`);
  process.exit(0);
}

function child(kind: Case, mode: Mode, natsUrl = ''): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url)], {
      env: { ...process.env, [CHILD_ENV]: `${kind} ${mode} ${natsUrl}`.trim() },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    proc.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    proc.on('error', reject);
    proc.on('exit', (code) => {
      if (code !== 0) reject(new Error(`observability bench: the ${kind}/${mode} child exited with ${code}`));
      else resolve(JSON.parse(out.trim().split('\n').pop()!) as ChildResult);
    });
  });
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function spread(values: readonly number[]): string {
  return `${median(values).toFixed(3)}× (${Math.min(...values).toFixed(3)}–${Math.max(...values).toFixed(3)})`;
}

export default async function (): Promise<BenchTable[]> {
  const { startNatsServer } = await import('../test/support/nats-server.js');
  const server = await startNatsServer({ jetstream: false });
  const tables: BenchTable[] = [];
  try {
    for (const kind of ['tools', 'nats'] as const) {
      const modes = MODES[kind];
      const results: Record<Mode, ChildResult[]> = {
        off: [],
        metrics: [],
        tracing: [],
        on: [],
        'sdk-floor': [],
      };
      const ratios: Record<Mode, number[]> = { off: [], metrics: [], tracing: [], on: [], 'sdk-floor': [] };
      for (let round = 0; round < PAIRS; round++) {
        // Each round runs every mode once, in an order rotated from round to round.
        const order = modes.map((_, i) => modes[(i + round) % modes.length]!);
        if (round % 2 === 1) order.reverse();
        const got: Partial<Record<Mode, ChildResult>> = {};
        for (const mode of order) got[mode] = await child(kind, mode, kind === 'nats' ? server.url : '');
        for (const mode of modes) results[mode].push(got[mode]!);
        // Slower-by ratio: p50 mode ÷ off for sequential calls; throughput off ÷ mode with calls in flight.
        for (const mode of modes) {
          ratios[mode].push(
            kind === 'tools' ? got[mode]!.p50Us / got.off!.p50Us : got.off!.opsPerSec / got[mode]!.opsPerSec,
          );
        }
      }
      const name = kind === 'tools' ? 'ToolSet.call (zod FunctionTool)' : 'tool service over NATS';
      const concurrency = kind === 'tools' ? 1 : NATS_IN_FLIGHT;
      const label: Record<Mode, string> = {
        off: 'tracing + metrics off',
        metrics: 'metrics only',
        tracing: 'tracing only',
        on: 'tracing + metrics on',
        'sdk-floor': 'a bare SDK span around it (the floor), toolbus tracing off',
      };
      const rows: BenchRow[] = modes.map((mode) => ({
        name: `${name}, ${label[mode]}`,
        concurrency,
        opsPerSec: median(results[mode].map((r) => r.opsPerSec)),
        p50Us: median(results[mode].map((r) => r.p50Us)),
        p99Us: median(results[mode].map((r) => r.p99Us)),
      }));
      const ratio = median(ratios.on);
      const spans = median(results.on.map((r) => r.spans));
      const measure = kind === 'tools' ? 'p50 latency' : 'time per call, from throughput';
      tables.push({
        title: `Observability overhead: ${name}, ${concurrency} in flight (tracing exported to a no-op, metrics hooks)`,
        baseline: rows[0]!.name,
        rows,
        notes: [
          `${PAIRS} rounds of child processes, one per mode, interleaved; slower-by (${measure}) per round against off: ` +
            `metrics only ${spread(ratios.metrics)}, tracing only ${spread(ratios.tracing)}, both ${spread(ratios.on)}` +
            (kind === 'tools' ? `, a bare SDK span ${spread(ratios['sdk-floor'])} ` : ' ') +
            `(target ≤ 1.10 for both: ${ratio <= 1.1 ? 'met' : 'NOT met'}). Spans exported per "on" run (median): ${spans.toLocaleString('en-US')}` +
            (spans === 0 ? ' — none: tracing did not record, so this measures nothing' : '') +
            '.',
        ],
      });
    }
  } finally {
    await server.stop();
  }
  return tables;
}
