/**
 * @module Progress, end to end below the agent: a tool's `ctx.progress` reaches the `ToolSet`'s
 * `onProgress` hooks and the call's own `onProgress`; a tool service's streamed chunks and an MCP
 * server's progress notifications become progress reports; and the MCP bridge sends a tool's reports to
 * an MCP client that asked with a progress token (the official client's `onprogress`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { createMcpServer, mcpServerTools } from '../../src/adapters/mcp/index.js';
import { MemoryBus } from '../../src/bus/index.js';
import { DynamicToolService, createToolServiceTool } from '../../src/services/index.js';
import {
  FunctionTool,
  LiveToolSet,
  ToolSet,
  type ToolProgress,
  type ToolProgressEvent,
} from '../../src/tools/index.js';
import { stdioFixtureParams } from '../fixtures/mcp-spawn.js';

function stepper(seen: { listening: boolean[] }): FunctionTool {
  return new FunctionTool(
    async ({ steps }: { steps: number }, ctx) => {
      seen.listening.push(ctx.progress !== undefined);
      for (let i = 1; i <= steps; i++) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        ctx.progress?.({ progress: i, total: steps, message: `step ${i}` });
      }
      return `${steps} steps`;
    },
    { name: 'stepper', description: 'Takes steps', parameters: z.object({ steps: z.number() }) },
  );
}

test("ctx.progress reaches the onProgress hooks and the call's own listener; without one it is not set", async () => {
  const seen = { listening: [] as boolean[] };
  const hooked: ToolProgressEvent[] = [];
  const tools = new ToolSet([stepper(seen)], { hooks: { onProgress: (e) => void hooked.push(e) } });
  const own: ToolProgress[] = [];
  const result = await tools.call(
    'stepper',
    { steps: 3 },
    { callId: 'c1', user: 'ann', onProgress: (p) => own.push(p) },
  );
  assert.equal(result.content, '3 steps');
  assert.deepEqual(own, [
    { progress: 1, total: 3, message: 'step 1' },
    { progress: 2, total: 3, message: 'step 2' },
    { progress: 3, total: 3, message: 'step 3' },
  ]);
  assert.deepEqual(
    hooked.map((e) => [e.name, e.callId, e.user, e.progress]),
    [
      ['stepper', 'c1', 'ann', 1],
      ['stepper', 'c1', 'ann', 2],
      ['stepper', 'c1', 'ann', 3],
    ],
  );
  // A listener that throws changes nothing.
  const loud = await tools.call(
    'stepper',
    { steps: 1 },
    {
      onProgress: () => {
        throw new Error('boom');
      },
    },
  );
  assert.equal(loud.isError, false);
  await new ToolSet([stepper(seen)]).call('stepper', { steps: 1 });
  assert.deepEqual(seen.listening, [true, true, false]);
});

test("a tool service's streamed chunks are progress reports; the result is still every chunk joined", async (t) => {
  const bus = new MemoryBus();
  const queues = { requestQueue: 'request:tg:chunks', responseQueue: 'response:tg:chunks' };
  const service = new DynamicToolService({
    bus,
    ...queues,
    invoke: async (_u, _c, _a, ctx) => {
      await ctx.write('one ');
      await ctx.write('two ');
      return 'three';
    },
  });
  await service.start();
  t.after(async () => {
    await service.stop();
    await bus.close();
  });
  const { tool } = createToolServiceTool({
    bus,
    service: { id: 'chunks', 'request-queue': queues.requestQueue, 'response-queue': queues.responseQueue },
    tool: { type: 'tool-service', name: 'count', description: 'Counts', service: 'chunks', arguments: [] },
  });
  const reports: ToolProgress[] = [];
  const result = await new ToolSet([tool]).call('count', {}, { onProgress: (p) => reports.push(p) });
  assert.equal(result.content, 'one two three');
  assert.deepEqual(reports, [
    { progress: 1, message: 'one ' },
    { progress: 2, message: 'two ' },
  ]);
});

test("the MCP bridge sends progress notifications to a client that asked; an MCP server's progress reaches ctx.progress", async (t) => {
  const seen = { listening: [] as boolean[] };
  const server = createMcpServer(new LiveToolSet([stepper(seen)]), { name: 'progress-test' });
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(clientSide);
  t.after(() => client.close());
  const notified: { progress: number; total?: number; message?: string }[] = [];
  const result = await client.callTool(
    { name: 'stepper', arguments: { steps: 3 } },
    { onprogress: (p) => notified.push({ progress: p.progress, total: p.total, message: p.message }) },
  );
  assert.equal((result.content as { text: string }[])[0]!.text, '3 steps');
  assert.deepEqual(notified, [
    { progress: 1, total: 3, message: 'step 1' },
    { progress: 2, total: 3, message: 'step 2' },
    { progress: 3, total: 3, message: 'step 3' },
  ]);
  // Without onprogress the client sends no token, and the tool sees nobody listening.
  await client.callTool({ name: 'stepper', arguments: { steps: 1 } });
  assert.deepEqual(seen.listening, [true, false]);

  // The other way: the fixture's `slow` tool notifies progress after each step.
  const mcp = await mcpServerTools({ ...stdioFixtureParams(), id: 'fixture' });
  t.after(() => mcp.close());
  const reports: ToolProgress[] = [];
  const slow = await new ToolSet([mcp.get('slow')!]).call(
    'slow',
    { steps: 2, stepMs: 20 },
    { onProgress: (p) => reports.push(p) },
  );
  assert.equal(slow.content, 'done after 2 steps');
  // The last notification may come after the result (the SDK client drops a call's progress handler
  // with its response), so the reports are the first steps, in order.
  assert.ok(reports.length >= 1, 'progress arrived');
  reports.forEach((p, i) => assert.deepEqual([p.progress, p.total, p.message], [i + 1, 2, `step ${i + 1}`]));
});
