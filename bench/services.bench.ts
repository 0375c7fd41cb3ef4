/**
 * @module Benchmark: a tool-service call over `MemoryBus` against a direct function call plus JSON, a
 * direct `FunctionTool.runJson`, and the MCP SDK's `InMemoryTransport` with one trivial tool (the option
 * users would pick instead), side by side in one run: p50/p99 sequential, throughput at 64 and 256 in flight.
 *
 * Targets: MemoryBus throughput ≥ 3× MCP InMemory; sequential p50 ≤ 2.5× the direct call plus JSON.
 * Each row is the better of two alternating rounds.
 */
import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { DynamicToolService, FunctionTool, MemoryBus, ToolServiceClient } from '../src/index.js';
import { createToolServiceTool } from '../src/services/index.js';
import { measure, type BenchRow, type BenchTable, type MeasureOptions } from './harness.js';

const USER = 'alice';
const CONFIG = { style: 'pun', collection: 'customers' };
const ARGS = { topic: 'programming', question: 'What are the top customer complaints this week?' };

/** The trivial tool every case runs. */
function tellJoke(user: string, config: Record<string, unknown>, args: Record<string, unknown>): string {
  return `Hey ${user}! Here's a ${String(config['style'])} about ${String(args['topic'])}`;
}

const DIRECT = 'direct call + JSON (request and response envelopes)';
const BUS = 'ToolServiceClient.call over MemoryBus';
const BUS_TOOL = 'tool-service Tool.runJson over MemoryBus';
const FUNCTION_TOOL = 'FunctionTool.runJson (direct, in-process)';
const MCP = 'MCP SDK v2 InMemoryTransport client.callTool';

export default async function (): Promise<BenchTable[]> {
  // Direct: the same four JSON operations a bus round trip needs, and nothing else.
  const direct = async (): Promise<string> => {
    const request = JSON.stringify({
      user: USER,
      config: JSON.stringify(CONFIG),
      arguments: JSON.stringify(ARGS),
    });
    const parsed = JSON.parse(request) as { user: string; config: string; arguments: string };
    const result = tellJoke(
      parsed.user,
      JSON.parse(parsed.config) as Record<string, unknown>,
      JSON.parse(parsed.arguments) as Record<string, unknown>,
    );
    const response = JSON.stringify({ error: null, response: result, end_of_stream: true });
    return (JSON.parse(response) as { response: string }).response;
  };

  // Tool service over MemoryBus.
  const bus = new MemoryBus();
  const service = new DynamicToolService({
    bus,
    id: 'joke-service',
    topic: 'joke',
    concurrency: 512,
    invoke: tellJoke,
  });
  await service.start();
  const client = new ToolServiceClient(bus, {
    requestQueue: 'non-persistent://tg/request/joke',
    responseQueue: 'non-persistent://tg/response/joke',
  });
  const viaBus = (): Promise<string> => client.call(USER, CONFIG, ARGS);
  const { tool } = createToolServiceTool({
    client,
    service: {
      id: 'joke-service',
      'request-queue': 'non-persistent://tg/request/joke',
      'response-queue': 'non-persistent://tg/response/joke',
      'config-params': [{ name: 'style' }, { name: 'collection' }],
    },
    tool: {
      type: 'tool-service',
      name: 'tell-joke',
      description: 'Tell a joke',
      service: 'joke-service',
      ...CONFIG,
      arguments: [
        { name: 'topic', type: 'string', description: 'topic' },
        { name: 'question', type: 'string', description: 'question' },
      ],
    },
  });
  const runOptions = { user: USER };
  const viaBusTool = (): Promise<unknown> => tool.runJson(ARGS, undefined, runOptions);

  // FunctionTool, in-process.
  const functionTool = new FunctionTool(
    async (args: { topic: string; question: string }) => tellJoke(USER, CONFIG, args),
    {
      name: 'tell-joke',
      description: 'Tell a joke',
      parameters: z.object({ topic: z.string(), question: z.string() }),
    },
  );
  const viaFunctionTool = (): Promise<unknown> => functionTool.runJson(ARGS);

  // MCP SDK v2 over its in-memory transport, one trivial tool.
  const mcpServer = new McpServer({ name: 'bench', version: '1.0.0' });
  mcpServer.registerTool(
    'tell-joke',
    { description: 'Tell a joke', inputSchema: z.object({ topic: z.string(), question: z.string() }) },
    async (args) => ({ content: [{ type: 'text', text: tellJoke(USER, CONFIG, args) }] }),
  );
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await mcpServer.connect(serverTransport);
  const mcpClient = new Client({ name: 'bench-client', version: '1.0.0' });
  await mcpClient.connect(clientTransport);
  const viaMcp = (): Promise<unknown> => mcpClient.callTool({ name: 'tell-joke', arguments: ARGS });

  // Sanity: every case returns the same text.
  const expected = await direct();
  if (
    (await viaBus()) !== expected ||
    (await viaBusTool()) !== expected ||
    (await viaFunctionTool()) !== expected
  ) {
    throw new Error('bench cases disagree');
  }

  const cases: [string, () => Promise<unknown>][] = [
    [DIRECT, direct],
    [BUS, viaBus],
    [BUS_TOOL, viaBusTool],
    [FUNCTION_TOOL, viaFunctionTool],
    [MCP, viaMcp],
  ];
  // Two rounds, the cases alternating within each, keeping each case's better round: the machine is
  // shared and noisy, and this way no case gets all the quiet (or busy) moments.
  const sequential: MeasureOptions = { iterations: 60_000, maxMs: 1_000, warmup: 3_000 };
  const rows: BenchRow[] = [];
  for (const concurrency of [1, 64, 256]) {
    const options: MeasureOptions =
      concurrency === 1 ? sequential : { concurrency, iterations: 200_000, maxMs: 1_000, warmup: 1_000 };
    const best = new Map<string, BenchRow>();
    for (let round = 0; round < 2; round++) {
      for (const [name, fn] of cases) {
        const row = await measure(name, fn, options);
        const previous = best.get(name);
        if (!previous || row.opsPerSec > previous.opsPerSec) best.set(name, row);
      }
    }
    rows.push(...best.values());
  }

  await mcpClient.close();
  await mcpServer.close();
  await client.close();
  await service.stop();
  await bus.close();

  const row = (name: string, concurrency: number): BenchRow =>
    rows.find((r) => r.name === name && r.concurrency === concurrency)!;
  const tput = (c: number): number => row(BUS, c).opsPerSec / row(MCP, c).opsPerSec;
  const p50 = row(BUS, 1).p50Us / row(DIRECT, 1).p50Us;
  const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met');
  return [
    {
      title: 'Tool service over MemoryBus vs direct call, FunctionTool and MCP InMemoryTransport',
      baseline: DIRECT,
      rows,
      notes: [
        `MemoryBus throughput ÷ MCP InMemory: ${tput(1).toFixed(2)}× sequential, ${tput(64).toFixed(2)}× at 64 in flight, ` +
          `${tput(256).toFixed(2)}× at 256 (target ≥ 3×: ${verdict(tput(64) >= 3 && tput(256) >= 3)}).`,
        `MemoryBus sequential p50 ÷ direct call + JSON: ${p50.toFixed(2)}× (target ≤ 2.5×: ${verdict(p50 <= 2.5)}).`,
      ],
    },
  ];
}
