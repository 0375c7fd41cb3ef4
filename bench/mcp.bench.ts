/**
 * @module Benchmark: a toolbus tool served through the MCP bridge (`createMcpServer` over a `ToolSet`)
 * next to the MCP SDK baseline (the same trivial tool registered directly on an `McpServer`), both called
 * by the official client over the SDK's in-memory transport in the same run, so the bridge's own cost
 * is visible. Target: the bridge within 1.5× the baseline's latency.
 */
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { createMcpServer } from '../src/adapters/mcp/index.js';
import { FunctionTool, ToolSet } from '../src/tools/index.js';
import { measure, type BenchRow, type BenchTable } from './harness.js';

async function connect(server: { connect(t: InMemoryTransport): Promise<void> }): Promise<Client> {
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(clientSide);
  return client;
}

export default async function (): Promise<BenchTable[]> {
  const add = ({ a, b }: { a: number; b: number }): number => a + b;
  const parameters = z.object({ a: z.number(), b: z.number() });

  const sdk = new McpServer({ name: 'baseline', version: '1' });
  sdk.registerTool('add', { description: 'Adds two numbers', inputSchema: parameters }, async (args) => ({
    content: [{ type: 'text', text: String(add(args)) }],
  }));
  const baselineClient = await connect(sdk);

  const tools = new ToolSet([
    new FunctionTool(add, { name: 'add', description: 'Adds two numbers', parameters }),
  ]);
  const bridgeClient = await connect(createMcpServer(tools));

  const request = { name: 'add', arguments: { a: 1, b: 2 } };
  const baseline = (): Promise<unknown> => baselineClient.callTool(request);
  const bridge = (): Promise<unknown> => bridgeClient.callTool(request);
  const sequential = { iterations: 20_000, maxMs: 3_000, warmup: 1_000 };
  const parallel = { ...sequential, concurrency: 16 };

  const BASE = 'MCP SDK baseline: McpServer.registerTool (zod)';
  const BRIDGE = 'toolbus bridge: createMcpServer(ToolSet[FunctionTool])';
  // Alternate the two so neither gets all the warm (or cold) periods of a noisy machine.
  const rows: BenchRow[] = [];
  rows.push(await measure(BASE, baseline, sequential));
  rows.push(await measure(BRIDGE, bridge, sequential));
  const base2 = await measure(BASE, baseline, sequential);
  const bridge2 = await measure(BRIDGE, bridge, sequential);
  rows.push(await measure(BASE, baseline, parallel));
  rows.push(await measure(BRIDGE, bridge, parallel));

  await baselineClient.close();
  await bridgeClient.close();

  const p50Ratio = (rows[1]!.p50Us / rows[0]!.p50Us + bridge2.p50Us / base2.p50Us) / 2;
  const tputRatio = (rows[0]!.opsPerSec / rows[1]!.opsPerSec + base2.opsPerSec / bridge2.opsPerSec) / 2;
  return [
    {
      title: 'MCP bridge vs MCP SDK baseline (tools/call over InMemoryTransport)',
      baseline: BASE,
      rows,
      notes: [
        `Bridge p50 latency = ${p50Ratio.toFixed(2)}× the baseline; baseline throughput = ${tputRatio.toFixed(2)}× the bridge ` +
          '(mean of two alternating sequential runs; target ≤ 1.5×).',
        `2nd sequential run: baseline p50 ${base2.p50Us.toFixed(1)} µs, bridge p50 ${bridge2.p50Us.toFixed(1)} µs.`,
      ],
    },
  ];
}
