/**
 * @module Benchmark harness: latency percentiles and throughput at a given concurrency, printed as tables
 * with a ratio against a baseline measured in the same run (these machines are noisy).
 */

/** One measured row. */
export interface BenchRow {
  /** What was measured, e.g. `ToolSet.call (trivial FunctionTool)`. */
  name: string;
  /** Calls in flight at once. */
  concurrency: number;
  /** Completed calls per second. */
  opsPerSec: number;
  /** Median latency in microseconds (sequential runs only; NaN otherwise). */
  p50Us: number;
  /** 99th percentile latency in microseconds. */
  p99Us: number;
}

/** A group of rows compared against one baseline row (by name). */
export interface BenchTable {
  title: string;
  /** The name of the row every other row is divided by. */
  baseline: string;
  rows: BenchRow[];
  /** Free-form lines printed under the table (targets, extra figures). */
  notes?: string[];
}

/** Options of {@link measure}. */
export interface MeasureOptions {
  /** Calls in flight at once. @default 1 */
  concurrency?: number;
  /** Stop after this many calls. @default 20_000 */
  iterations?: number;
  /** Stop after this long, whichever comes first. @default 2_000 */
  maxMs?: number;
  /** Untimed calls first. @default 500 */
  warmup?: number;
}

/**
 * Runs `fn` repeatedly and returns throughput and latency percentiles. Bounded in count and in time.
 */
export async function measure(
  name: string,
  fn: () => Promise<unknown>,
  options: MeasureOptions = {},
): Promise<BenchRow> {
  const concurrency = options.concurrency ?? 1;
  const iterations = options.iterations ?? 20_000;
  const maxMs = options.maxMs ?? 2_000;
  const warmup = options.warmup ?? 500;
  for (let i = 0; i < warmup; i++) await fn();
  const latencies: number[] = [];
  let started = 0;
  const t0 = performance.now();
  const deadline = t0 + maxMs;
  async function worker(): Promise<void> {
    while (started < iterations && performance.now() < deadline) {
      started++;
      const s = performance.now();
      await fn();
      latencies.push(performance.now() - s);
    }
  }
  await Promise.all(Array.from({ length: concurrency }, () => worker()));
  const elapsed = performance.now() - t0;
  latencies.sort((a, b) => a - b);
  const pct = (p: number): number =>
    (latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? NaN) * 1000;
  return {
    name,
    concurrency,
    opsPerSec: (latencies.length / elapsed) * 1000,
    p50Us: pct(0.5),
    p99Us: pct(0.99),
  };
}

function fmt(n: number, digits = 1): string {
  if (!Number.isFinite(n)) return '-';
  return n >= 1000 ? Math.round(n).toLocaleString('en-US') : n.toFixed(digits);
}

/** Prints a table with throughput and p50 ratios against the baseline row of the same concurrency. */
export function printTable(table: BenchTable): void {
  const lines: string[] = [];
  lines.push(`\n## ${table.title}\n`);
  lines.push('| case | in flight | ops/s | p50 µs | p99 µs | ops/s ÷ baseline | p50 ÷ baseline |');
  lines.push('|---|---:|---:|---:|---:|---:|---:|');
  for (const row of table.rows) {
    const base = table.rows.find((r) => r.name === table.baseline && r.concurrency === row.concurrency);
    const tput = base ? fmt(row.opsPerSec / base.opsPerSec, 2) : '-';
    const p50 = base ? fmt(row.p50Us / base.p50Us, 2) : '-';
    lines.push(
      `| ${row.name} | ${row.concurrency} | ${fmt(row.opsPerSec, 0)} | ${fmt(row.p50Us)} | ${fmt(row.p99Us)} | ${tput} | ${p50} |`,
    );
  }
  for (const note of table.notes ?? []) lines.push(`\n${note}`);
  process.stdout.write(lines.join('\n') + '\n');
}

/** A benchmark module in `bench/*.bench.ts` exports this. */
export type BenchSuite = () => Promise<BenchTable[]>;
