/**
 * @module Benchmark: one trivial tool call, sequential, four ways side by side in one process:
 *
 * - direct: `JSON.parse` + the function + `JSON.stringify` (the floor);
 * - `ToolSet.call(name, json)` on a zod `FunctionTool`: lookup, parse, validate, call id, deadline,
 *   concurrency slot, race, result envelope;
 * - `JSON.parse` + `FunctionTool.runJson` + `returnValueAsString`: validation and the run without the set;
 * - the Vercel AI SDK's per-call path in `generateText` (ai 7, provider-utils 5): the blank check,
 *   `safeParseJSON({ text, schema })` (secure parse, then the zod schema's validate), `tool.execute(input,
 *   { toolCallId, messages })`, `JSON.stringify` of the output. Its `asSchema` is built once, not per call as
 *   `generateText` does, and its `executeTool` stream and abort-signal merge are left out: the SDK row is
 *   the cheapest form of its path.
 *
 * Every contender calls the same async function with the same zod schema and produces the same text (a
 * check before and after the timed rounds fails the bench otherwise; for `ToolSet.call` the text is its
 * result's `content`).
 *
 * Method: {@link ROUNDS} rounds. Within a round the four take turns in batches of {@link BATCH} calls,
 * {@link BATCHES} times over, in one of the orders of a balanced Latin square (each runs in every
 * position, and after every other, equally often), so a burst of load on a shared machine lands on all
 * four alike and a round's ratios compare like with like. Every call is timed on its own
 * (`performance.now()` before and after, the same cost for each contender). A row is the median of its
 * rounds; the notes give the per-round ratios (paired within a round) as median (min–max).
 *
 * Targets: `ToolSet.call` p50 ≤ 2× direct, and below the AI SDK's path (< 1×).
 */
// Imported, not the global (a getter read on every use): the timing adds as little as it can to each call.
import { performance } from 'node:perf_hooks';
import { asSchema, safeParseJSON, type ModelMessage } from '@ai-sdk/provider-utils';
import { tool as aiTool } from 'ai';
import { z } from 'zod';
import { FunctionTool, ToolSet, type ToolResult } from '../src/index.js';
import { measure, type BenchRow, type BenchTable } from './harness.js';

/** One contender's calls in one round: every call's latency (µs) and the wall time of its turns (ms). */
interface RoundSamples {
  latencies: number[];
  wallMs: number;
}

/** Rounds; a multiple of the square's four orders. */
const ROUNDS = 32;
/** Turns each contender takes in one round. */
const BATCHES = 80;
/** Calls in one turn. */
const BATCH = 250;
/** Rows of a balanced Latin square for four contenders (Williams design). */
const ORDERS: readonly (readonly number[])[] = [
  [0, 1, 3, 2],
  [1, 2, 0, 3],
  [2, 3, 1, 0],
  [3, 0, 2, 1],
];
const DIRECT = 'direct: JSON.parse + fn + JSON.stringify';
const TOOL_SET = 'ToolSet.call (zod FunctionTool)';
const RUN_JSON = 'JSON.parse + FunctionTool.runJson + returnValueAsString';
const AI_SDK = 'AI SDK: safeParseJSON (zod) + tool.execute + JSON.stringify';
const ARGS = '{"a": 1, "b": 2}';

/** The median (the upper of the middle two for an even count). */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
}

/** A contender's row for one round: p50 and p99 of its latencies, calls per second of its turns. */
function summarize(name: string, samples: RoundSamples): BenchRow {
  const sorted = samples.latencies.sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!;
  return {
    name,
    concurrency: 1,
    opsPerSec: (sorted.length / samples.wallMs) * 1000,
    p50Us: at(0.5),
    p99Us: at(0.99),
  };
}

/** `median× (min–max)` of per-round ratios. */
function spread(values: readonly number[]): string {
  return `${median(values).toFixed(2)}× (${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)})`;
}

export default async function (): Promise<BenchTable[]> {
  const add = async ({ a, b }: { a: number; b: number }): Promise<{ sum: number }> => ({ sum: a + b });
  const schema = z.object({ a: z.number().describe('First'), b: z.number().describe('Second') });
  const tool = new FunctionTool(add, { name: 'add', description: 'Adds two numbers.', parameters: schema });
  const set = new ToolSet([tool]);
  const sdkTool = aiTool({ description: 'Adds two numbers.', inputSchema: schema, execute: add });
  const sdkSchema = asSchema(sdkTool.inputSchema);
  const execute = sdkTool.execute!;
  const messages: ModelMessage[] = [];
  const context = {};

  const direct = (): Promise<string> =>
    add(JSON.parse(ARGS) as { a: number; b: number }).then((value) => JSON.stringify(value));
  // The call itself: its result's `content` is the text (checked before and after the timed rounds).
  const viaSet = (): Promise<ToolResult> => set.call('add', ARGS);
  const viaRunJson = (): Promise<string> =>
    tool.runJson(JSON.parse(ARGS)).then((value) => tool.returnValueAsString(value));
  // What generateText does per client-side tool call (doParseToolCall, then executeToolCall).
  const viaSdk = async (): Promise<string> => {
    const parsed =
      ARGS.trim() === ''
        ? { success: true as const, value: {} }
        : await safeParseJSON({ text: ARGS, schema: sdkSchema });
    if (!parsed.success) throw new Error(`tools bench: AI SDK parse failed: ${String(parsed.error)}`);
    const output: unknown = await execute(parsed.value as { a: number; b: number }, {
      toolCallId: 'call_1',
      messages,
      context,
    });
    return JSON.stringify(output);
  };
  const contenders: [string, () => Promise<string | ToolResult>][] = [
    [DIRECT, direct],
    [TOOL_SET, viaSet],
    [RUN_JSON, viaRunJson],
    [AI_SDK, viaSdk],
  ];

  const expected = await direct();
  const check = async (): Promise<void> => {
    for (const [name, fn] of contenders) {
      const value = await fn();
      const got =
        typeof value === 'string' ? value : value.isError ? `error: ${value.content}` : value.content;
      if (got !== expected) throw new Error(`tools bench: ${name} gave ${got}, direct gave ${expected}`);
    }
  };
  await check();
  // Warm-up: every contender optimised before the first timed round.
  for (const [name, fn] of contenders) await measure(name, fn, { iterations: 50_000, warmup: 0 });

  const byName = new Map<string, BenchRow[]>(contenders.map(([name]) => [name, []]));
  const vsDirect = new Map<string, number[]>(contenders.map(([name]) => [name, []]));
  const setVsSdk: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order = ORDERS[round % ORDERS.length]!;
    const samples: RoundSamples[] = contenders.map(() => ({ latencies: [], wallMs: 0 }));
    for (let turn = 0; turn < BATCHES; turn++) {
      for (const i of order) {
        const fn = contenders[i]![1];
        const own = samples[i]!;
        const started = performance.now();
        for (let k = 0; k < BATCH; k++) {
          const s = performance.now();
          await fn();
          own.latencies.push((performance.now() - s) * 1000);
        }
        own.wallMs += performance.now() - started;
      }
    }
    const measured = new Map<string, BenchRow>();
    contenders.forEach(([name], i) => {
      const row = summarize(name, samples[i]!);
      measured.set(name, row);
      byName.get(name)!.push(row);
    });
    const base = measured.get(DIRECT)!.p50Us;
    for (const [name, row] of measured) vsDirect.get(name)!.push(row.p50Us / base);
    setVsSdk.push(measured.get(TOOL_SET)!.p50Us / measured.get(AI_SDK)!.p50Us);
  }

  await check();

  const rows: BenchRow[] = contenders.map(([name]) => {
    const rounds = byName.get(name)!;
    return {
      name,
      concurrency: 1,
      opsPerSec: median(rounds.map((r) => r.opsPerSec)),
      p50Us: median(rounds.map((r) => r.p50Us)),
      p99Us: median(rounds.map((r) => r.p99Us)),
    };
  });
  const setRatio = median(vsDirect.get(TOOL_SET)!);
  const sdkRatio = median(setVsSdk);
  return [
    {
      title: `One trivial tool call, sequential: ToolSet.call vs direct vs the AI SDK (${ROUNDS} interleaved rounds)`,
      baseline: DIRECT,
      rows,
      notes: [
        `p50 ÷ direct per round, median (min–max) over ${ROUNDS} rounds: ` +
          contenders
            .slice(1)
            .map(([name]) => `${name} ${spread(vsDirect.get(name)!)}`)
            .join('; ') +
          '.',
        `ToolSet.call p50 ${spread(vsDirect.get(TOOL_SET)!)} direct (target ≤ 2×: ${setRatio <= 2 ? 'met' : 'NOT met'}); ` +
          `${spread(setVsSdk)} the AI SDK's parse + validate + execute (target < 1×: ${sdkRatio < 1 ? 'met' : 'NOT met'}).`,
        `Rows: the median of the rounds (${BATCHES} turns of ${BATCH} calls per contender and round). Each latency includes the timing of the call itself, alike for all.`,
      ],
    },
  ];
}
