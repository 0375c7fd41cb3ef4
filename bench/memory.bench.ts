/**
 * @module Benchmark: memory per in-flight tool-service call over `MemoryBus` (client, bus and service in
 * one process). N calls of `ToolServiceClient.call` are held open by a `DynamicToolService` whose tool
 * does not resolve until released; the heap after a forced GC, before and while they are all in flight,
 * divided by N, is what each in-flight call costs. The same request as `services.bench.ts`.
 *
 * Rows: the tool returns one shared promise (what toolbus holds per call, plus the caller's promise and
 * the request's parsed `config` and `arguments` handed to the tool: the target row); the tool keeps a
 * resolver of its own per call (that tool's state on top); and, for scale, a floor with no bus: a Map of
 * pending promises with their request text, the least any caller keeps.
 *
 * Target: ≤ 1 KB per in-flight call (the first row). Runs in a child process started with
 * `--expose-gc`, so that nothing the other suites left on the heap is counted.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { DynamicToolService, MemoryBus, ToolServiceClient } from '../src/index.js';
import type { BenchTable } from './harness.js';
import type { TextTable } from './run.js';

/** Calls held in flight at once. */
const IN_FLIGHT = 10_000;
/** Measured repetitions, after one that is not counted (it also compiles and warms the code). */
const REPEATS = 5;
/** Set in the child process that measures. */
const CHILD_ENV = 'TOOLBUS_MEMORY_BENCH_CHILD';
const TARGET_BYTES = 1024;

const USER = 'alice';
const CONFIG = { style: 'pun', collection: 'customers' };
const ARGS = { topic: 'programming', question: 'What are the top customer complaints this week?' };
const REQUEST_QUEUE = 'non-persistent://tg/request/joke';
const RESPONSE_QUEUE = 'non-persistent://tg/response/joke';

const SHARED = 'ToolServiceClient.call → DynamicToolService, the tool returns one shared promise';
const PER_CALL = 'the same, the tool keeps a resolver of its own per call';
const FLOOR = 'floor, no bus: a Map of pending promises + the request text';

type Case = 'shared' | 'per-call' | 'floor';
type Results = Record<Case, number[]>;

const gc = (globalThis as { gc?: () => void }).gc;

/** Heap in use after two full collections (the second one frees what the first one's finalizers left). */
function heapUsed(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

function tick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Bytes per call held in flight, for one case, once. */
async function measureOnce(kind: Case): Promise<number> {
  // The bench's own arrays are made before the baseline: only what each call allocates is counted.
  const calls: Promise<unknown>[] = new Array<Promise<unknown>>(IN_FLIGHT);
  if (kind === 'floor') {
    const pending = new Map<string, { resolve: (text: string) => void; request: string }>();
    const before = heapUsed();
    for (let i = 0; i < IN_FLIGHT; i++) {
      const id = `call-${i}`;
      const request = JSON.stringify({
        user: USER,
        config: JSON.stringify(CONFIG),
        arguments: JSON.stringify(ARGS),
      });
      calls[i] = new Promise<string>((resolve) => pending.set(id, { resolve, request }));
    }
    const bytes = (heapUsed() - before) / IN_FLIGHT;
    for (const entry of pending.values()) entry.resolve('done');
    await Promise.all(calls);
    return bytes;
  }

  const resolvers: ((value: string) => void)[] = new Array<(value: string) => void>(IN_FLIGHT);
  let held = 0;
  let releaseShared!: (value: string) => void;
  let shared = new Promise<string>((resolve) => (releaseShared = resolve));
  const bus = new MemoryBus();
  const service = new DynamicToolService({
    bus,
    id: 'joke-service',
    topic: 'joke',
    concurrency: IN_FLIGHT,
    maxQueued: IN_FLIGHT,
    invoke:
      kind === 'shared'
        ? () => shared
        : () => new Promise<string>((resolve) => (resolvers[held++] = resolve)),
  });
  await service.start();
  const client = new ToolServiceClient(bus, {
    requestQueue: REQUEST_QUEUE,
    responseQueue: RESPONSE_QUEUE,
    timeoutMs: 600_000,
  });
  const release = (): void => {
    releaseShared('done');
    shared = new Promise<string>((resolve) => (releaseShared = resolve));
    for (let i = 0; i < held; i++) resolvers[i]!('done');
    held = 0;
  };
  // Subscriptions, the queues' first timers and the code paths, before the baseline.
  for (let i = 0; i < 200; i++) {
    const call = client.call(USER, CONFIG, ARGS);
    while (service.stats().inFlight === 0) await tick();
    release();
    await call;
  }

  const before = heapUsed();
  for (let i = 0; i < IN_FLIGHT; i++) calls[i] = client.call(USER, CONFIG, ARGS);
  while (service.stats().inFlight < IN_FLIGHT) await tick();
  const bytes = (heapUsed() - before) / IN_FLIGHT;

  release();
  const texts = await Promise.all(calls);
  if (texts.some((text) => text !== 'done')) throw new Error('memory bench: a call did not complete');
  await client.close();
  await service.stop();
  await bus.close();
  return bytes;
}

/** The child's work: every case, interleaved, one uncounted round first. */
async function measureAll(): Promise<Results> {
  const results: Results = { shared: [], 'per-call': [], floor: [] };
  const cases: Case[] = ['shared', 'per-call', 'floor'];
  for (let round = 0; round <= REPEATS; round++) {
    for (const kind of round % 2 === 0 ? cases : [...cases].reverse()) {
      const bytes = await measureOnce(kind);
      if (round > 0) results[kind].push(bytes);
    }
  }
  return results;
}

if (process.env[CHILD_ENV] === '1') {
  if (!gc) throw new Error('memory bench: run with --expose-gc');
  process.stdout.write(`${JSON.stringify(await measureAll())}\n`);
  process.exit(0);
}

/** Runs the measurement in a child process with `--expose-gc`, and returns its output. */
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
      if (code !== 0) reject(new Error(`memory bench: the child exited with ${code}`));
      else resolve(JSON.parse(out) as Results);
    });
  });
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export default async function (): Promise<(BenchTable | TextTable)[]> {
  const results = await runChild();
  const rows = (
    [
      [SHARED, results.shared],
      [PER_CALL, results['per-call']],
      [FLOOR, results.floor],
    ] as const
  ).map(([name, values]) => [
    name,
    IN_FLIGHT.toLocaleString('en-US'),
    median(values).toFixed(0),
    `${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)}`,
    values.map((v) => v.toFixed(0)).join(' / '),
  ]);
  const own = median(results.shared);
  const worst = Math.max(...results.shared);
  return [
    {
      title: 'Memory per in-flight tool-service call over MemoryBus (client, bus and service in one process)',
      columns: ['case', 'in flight', 'bytes per call (median)', 'spread (min–max)', 'repeats'],
      rows,
      notes: [
        `heapUsed after a forced GC, while ${IN_FLIGHT.toLocaleString('en-US')} calls are in flight, minus before, ` +
          `divided by the calls; ${REPEATS} repeats in a child process with --expose-gc, the cases interleaved, ` +
          `after one uncounted round.`,
        `Per in-flight call, the tool returning one shared promise: ${own.toFixed(0)} bytes, at most ` +
          `${worst.toFixed(0)} (target ≤ ${TARGET_BYTES} bytes: ${worst <= TARGET_BYTES ? 'met' : 'NOT met'}). ` +
          `That is what toolbus keeps per call, plus the caller's promise and the parsed request the tool ` +
          `is given; a tool's own per-call state comes on top, ` +
          `${(median(results['per-call']) - own).toFixed(0)} bytes for one holding a resolver.`,
      ],
    },
  ];
}
