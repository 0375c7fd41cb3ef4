/**
 * @module Model client overhead: OpenAIChatCompletionClient against the raw `openai` SDK it is built on,
 * both talking to the same local OpenAI-compatible server (test/fixtures/fake-openai-server.ts, in this
 * process), so the difference is toolbus's work: message conversion, schema profiles, name mapping,
 * the deadline and cancellation wiring, parsing.
 *
 * Fairness: the raw SDK sends the very body the client sent (recorded by the server), and reads the same
 * data out of the response as the client's `CreateResult` holds (the tool calls, the text, the finish
 * reason and the usage; streamed, it joins the text and the tool-call deltas by index). A check before
 * timing fails the bench if the two disagree.
 *
 * Method: the two contenders take turns in ABBA order (raw, client, client, raw, …) over {@link ROUNDS}
 * short rounds, so neither gets all the quiet or busy moments of a shared machine. Each row is the median
 * of its rounds; the notes give the per-round ratio (client ÷ raw, paired within a round) as the median
 * and its spread (interquartile range, and min–max).
 *
 * Targets: `create` p50 at most 1.2× the raw SDK at 8 in flight (and at 1); `createStream` p50 at most
 * 1.3× iterating the raw SDK stream.
 */
import OpenAI from 'openai';
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionCreateParamsStreaming,
} from 'openai/resources/chat/completions';
import { z } from 'zod';
import { FunctionTool } from '../src/tools/index.js';
import { UserMessage } from '../src/models/index.js';
import type { CreateResult, FunctionCall } from '../src/models/index.js';
import { OpenAIChatCompletionClient } from '../src/models/openai/index.js';
import { chatCompletion, chunk, startFakeOpenAIServer } from '../test/fixtures/fake-openai-server.js';
import type { FakeOpenAIServer } from '../test/fixtures/fake-openai-server.js';
import { measure, type BenchRow, type BenchTable, type MeasureOptions } from './harness.js';

/**
 * Rounds per comparison; an even number, so each contender goes first equally often. Many short rounds
 * rather than a few long ones: the load of a shared machine changes within seconds.
 */
const ROUNDS = 30;
const RAW_JSON = 'raw openai SDK chat.completions.create';
const CLIENT_JSON = 'OpenAIChatCompletionClient.create';
const RAW_STREAM = 'raw openai SDK stream, iterate chunks';
const CLIENT_STREAM = 'OpenAIChatCompletionClient.createStream';

/** What both contenders read out of a response. */
interface Answer {
  text: string;
  calls: FunctionCall[];
  finishReason: string | null | undefined;
  promptTokens: number;
  completionTokens: number;
}

interface Comparison {
  rows: BenchRow[];
  /** Client ÷ raw, one per round: p50, throughput, and CPU time per call. */
  p50: number[];
  ops: number[];
  cpu: number[];
  /** Median CPU time per call, µs: raw, client. */
  cpuUs: [number, number];
}

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  return sorted[low]! + (sorted[Math.ceil(at)]! - sorted[low]!) * (at - low);
}

function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

function medianRow(rows: readonly BenchRow[]): BenchRow {
  return {
    name: rows[0]!.name,
    concurrency: rows[0]!.concurrency,
    opsPerSec: median(rows.map((r) => r.opsPerSec)),
    p50Us: median(rows.map((r) => r.p50Us)),
    p99Us: median(rows.map((r) => r.p99Us)),
  };
}

/**
 * One round of one contender, with the process's CPU time per call beside the latencies: on a loaded
 * machine the latency also counts waiting for a core, CPU time only the work (client, SDK and server).
 */
async function round(
  name: string,
  fn: () => Promise<unknown>,
  options: MeasureOptions,
): Promise<{ row: BenchRow; cpuUs: number }> {
  let calls = 0;
  const counted = (): Promise<unknown> => {
    calls++;
    return fn();
  };
  const before = process.cpuUsage();
  const row = await measure(name, counted, { ...options, warmup: 0 });
  const cpu = process.cpuUsage(before);
  return { row, cpuUs: (cpu.user + cpu.system) / calls };
}

/** Runs the raw contender and the client in ABBA order over {@link ROUNDS} rounds. */
async function compare(
  raw: [string, () => Promise<unknown>],
  client: [string, () => Promise<unknown>],
  options: MeasureOptions,
  warmup: number,
): Promise<Comparison> {
  for (const [, fn] of [raw, client]) {
    await measure('warm-up', fn, { ...options, iterations: warmup, warmup: 0 });
  }
  const rawRounds: { row: BenchRow; cpuUs: number }[] = [];
  const clientRounds: { row: BenchRow; cpuUs: number }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? [raw, client] : [client, raw];
    for (const [name, fn] of order) {
      (name === raw[0] ? rawRounds : clientRounds).push(await round(name, fn, options));
    }
  }
  const paired = (f: (x: { row: BenchRow; cpuUs: number }) => number): number[] =>
    clientRounds.map((c, i) => f(c) / f(rawRounds[i]!));
  return {
    rows: [medianRow(rawRounds.map((x) => x.row)), medianRow(clientRounds.map((x) => x.row))],
    p50: paired((x) => x.row.p50Us),
    ops: paired((x) => x.row.opsPerSec),
    cpu: paired((x) => x.cpuUs),
    cpuUs: [median(rawRounds.map((x) => x.cpuUs)), median(clientRounds.map((x) => x.cpuUs))],
  };
}

/** `median× (p25–p75, min–max)`. */
function spread(ratios: readonly number[]): string {
  const f = (q: number): string => quantile(ratios, q).toFixed(2);
  return `${f(0.5)}× (${f(0.25)}–${f(0.75)}, ${f(0)}–${f(1)})`;
}

function ratioNote(what: string, comparison: Comparison, target: number): string {
  const p50 = median(comparison.p50);
  const [rawCpu, clientCpu] = comparison.cpuUs.map((us) => Math.round(us).toLocaleString('en-US'));
  return (
    `${what}: client ÷ raw SDK per round (median (p25–p75, min–max) over ${ROUNDS} ABBA rounds): ` +
    `p50 ${spread(comparison.p50)}, ops/s ${spread(comparison.ops)}, ` +
    `CPU per call ${spread(comparison.cpu)} (${clientCpu} vs ${rawCpu} µs). ` +
    `Target p50 ≤ ${target}×: ${p50 <= target ? 'met' : 'NOT met'}.`
  );
}

function fromClient(result: CreateResult): Answer {
  const calls = Array.isArray(result.content) ? result.content : [];
  return {
    text: typeof result.content === 'string' ? result.content : (result.thought ?? ''),
    calls,
    finishReason: result.finishReason,
    promptTokens: result.usage.promptTokens,
    completionTokens: result.usage.completionTokens,
  };
}

function sameAnswer(what: string, client: Answer, raw: Answer): void {
  const a = JSON.stringify({ ...client, finishReason: undefined });
  const b = JSON.stringify({ ...raw, finishReason: undefined });
  if (a !== b) throw new Error(`models bench: ${what}: the client and the raw SDK disagree:\n${a}\n${b}`);
}

/** The body of the last request the server recorded (what the client sent). */
function lastBody(server: FakeOpenAIServer): Record<string, unknown> {
  const body = server.requests.at(-1)?.body;
  if (body === undefined) throw new Error('models bench: the server recorded no request body');
  return body;
}

export default async function (): Promise<BenchTable[]> {
  const server = await startFakeOpenAIServer();
  try {
    const tool = new FunctionTool(async () => 1, {
      name: 'get_stock_price',
      description: 'Get the stock price.',
      parameters: z.object({
        ticker: z.string().describe('ticker'),
        date: z.string().describe('Date in YYYY/MM/DD'),
      }),
    });
    const sdk = new OpenAI({ apiKey: 'k', baseURL: server.baseURL, maxRetries: 0 });
    const client = new OpenAIChatCompletionClient({ model: 'm', apiKey: 'k', baseURL: server.baseURL });
    const messages = [new UserMessage({ content: 'What is the stock price of AAPL on 2021/01/01?' })];

    // One tool call as JSON.
    const completion = chatCompletion({
      toolCalls: [
        { id: 'call_1', name: 'get_stock_price', arguments: '{"ticker":"AAPL","date":"2021/01/01"}' },
      ],
      usage: { prompt_tokens: 60, completion_tokens: 20 },
    });
    const clientCreate = (): Promise<CreateResult> => client.create(messages, { tools: [tool] });
    server.reply({ json: completion });
    const created = fromClient(await clientCreate());
    const jsonBody = lastBody(server) as unknown as ChatCompletionCreateParamsNonStreaming;
    const rawCreate = async (): Promise<Answer> => {
      const response = await sdk.chat.completions.create(jsonBody);
      const choice = response.choices[0];
      const calls: FunctionCall[] = [];
      for (const call of choice?.message.tool_calls ?? []) {
        if (call.type === 'function') {
          calls.push({ id: call.id, name: call.function.name, arguments: call.function.arguments });
        }
      }
      return {
        text: choice?.message.content ?? '',
        calls,
        finishReason: choice?.finish_reason,
        promptTokens: response.usage?.prompt_tokens ?? 0,
        completionTokens: response.usage?.completion_tokens ?? 0,
      };
    };

    // 100 text chunks, then two tool calls whose arguments arrive in 20 pieces each, then usage.
    const sse: unknown[] = [chunk({ role: 'assistant', content: '' })];
    for (let i = 0; i < 100; i++) sse.push(chunk({ content: `word${i} ` }));
    for (const index of [0, 1]) {
      sse.push(
        chunk({ toolCalls: [{ index, id: `call_${index}`, name: 'get_stock_price', arguments: '' }] }),
      );
      for (let i = 0; i < 20; i++)
        sse.push(chunk({ toolCalls: [{ index, arguments: i === 0 ? '{"ticker":"' : 'A' }] }));
      sse.push(chunk({ toolCalls: [{ index, arguments: '","date":"2021/01/01"}' }] }));
    }
    sse.push(
      chunk({ finishReason: 'tool_calls' }),
      chunk({ usage: { prompt_tokens: 60, completion_tokens: 160 } }),
    );
    const clientStream = async (): Promise<CreateResult> => {
      let result: CreateResult | undefined;
      for await (const item of client.createStream(messages, { tools: [tool] })) {
        if (typeof item !== 'string') result = item;
      }
      return result!;
    };
    server.reply({ sse });
    const streamed = fromClient(await clientStream());
    const streamBody = lastBody(server) as unknown as ChatCompletionCreateParamsStreaming;
    const rawStream = async (): Promise<Answer> => {
      const stream = await sdk.chat.completions.create(streamBody);
      let text = '';
      const calls: FunctionCall[] = [];
      let finishReason: string | null | undefined;
      let usage: { prompt_tokens: number; completion_tokens: number } | undefined;
      for await (const part of stream) {
        if (part.usage) usage = part.usage;
        const choice = part.choices[0];
        if (!choice) continue;
        if (choice.finish_reason) finishReason = choice.finish_reason;
        if (choice.delta.content) text += choice.delta.content;
        for (const delta of choice.delta.tool_calls ?? []) {
          const call = (calls[delta.index] ??= { id: '', name: '', arguments: '' });
          if (delta.id) call.id = delta.id;
          if (delta.function?.name) call.name = delta.function.name;
          call.arguments += delta.function?.arguments ?? '';
        }
      }
      return {
        text: text.trim(),
        calls,
        finishReason,
        promptTokens: usage?.prompt_tokens ?? 0,
        completionTokens: usage?.completion_tokens ?? 0,
      };
    };

    server.replyAlways({ json: completion });
    sameAnswer('create', created, await rawCreate());
    const jsonRows: BenchRow[] = [];
    const jsonNotes: string[] = [];
    for (const concurrency of [1, 8]) {
      const comparison = await compare(
        [RAW_JSON, rawCreate],
        [CLIENT_JSON, clientCreate],
        { concurrency, iterations: concurrency === 1 ? 60 : 96, maxMs: 300 },
        300,
      );
      jsonRows.push(...comparison.rows);
      jsonNotes.push(ratioNote(`${concurrency} in flight`, comparison, 1.2));
    }

    server.replyAlways({ sse });
    sameAnswer('createStream', streamed, await rawStream());
    const streamComparison = await compare(
      [RAW_STREAM, rawStream],
      [CLIENT_STREAM, clientStream],
      { iterations: 12, maxMs: 300 },
      50,
    );

    return [
      {
        title: 'Model client, one tool call as JSON (local server)',
        baseline: RAW_JSON,
        rows: jsonRows,
        notes: [
          ...jsonNotes,
          'Rows: the median of the rounds. CPU time is the whole process: client, SDK and server.',
        ],
      },
      {
        title: `Model client, streamed (${sse.length} SSE chunks with split tool-call deltas)`,
        baseline: RAW_STREAM,
        rows: streamComparison.rows,
        notes: [
          ratioNote('1 in flight', streamComparison, 1.3),
          'Rows: the median of the rounds. CPU time is the whole process: client, SDK and server.',
        ],
      },
    ];
  } finally {
    await server.close();
  }
}
