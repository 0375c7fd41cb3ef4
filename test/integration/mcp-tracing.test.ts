/**
 * Tracing of MCP calls, with the real SDK registered (in memory): toolbus's MCP client (`McpSession`)
 * calls the bridge (`createMcpHttpHandler`) over Streamable HTTP on 127.0.0.1. The client's
 * `tools/call {tool}` CLIENT span carries its trace context in `params._meta`; the bridge's SERVER span
 * continues it, and the tool's `execute_tool` span is the bridge span's child.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { z } from 'zod';
import { McpSession, createMcpHttpHandler } from '../../src/adapters/mcp/index.js';
import { FunctionTool, LiveToolSet } from '../../src/tools/index.js';
import { parentIdOf, startTestTracing, type TestTracing } from '../support/tracing.js';

const tools = [
  new FunctionTool(({ a, b }: { a: number; b: number }) => a + b, {
    name: 'add',
    description: 'Adds two numbers',
    parameters: z.object({ a: z.number(), b: z.number() }),
  }),
  new FunctionTool(
    () => {
      throw new Error('disk on fire');
    },
    { name: 'explode', description: 'Always fails', parameters: z.object({}) },
  ),
];

let tracing: TestTracing;
before(() => {
  tracing = startTestTracing();
});
after(() => tracing.stop());
beforeEach(() => tracing.reset());

describe('MCP spans: client → bridge → tool', { timeout: 30_000 }, () => {
  for (const protocol of ['legacy', 'auto'] as const) {
    test(`${protocol === 'auto' ? '2026-07-28 (stateless)' : '2025 (sessions)'}: one trace through params._meta`, async (t) => {
      const handler = createMcpHttpHandler(new LiveToolSet(tools));
      const http = createServer((req, res) => void handler(req, res));
      await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
      const session = new McpSession({
        id: 'bridge',
        url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
        protocol,
      });
      t.after(async () => {
        await session.close();
        await handler.close();
        http.closeAllConnections();
        await new Promise<void>((resolve) => http.close(() => resolve()));
      });

      const result = await session.callTool('add', { a: 2, b: 3 });
      assert.equal(result.isError, undefined);
      const client = tracing.spans().find((s) => s.name === 'tools/call add' && s.kind === SpanKind.CLIENT);
      const server = tracing.spans().find((s) => s.name === 'tools/call add' && s.kind === SpanKind.SERVER);
      assert.ok(client && server, `spans: ${JSON.stringify(tracing.spans().map((s) => [s.name, s.kind]))}`);
      assert.equal(parentIdOf(server), client.spanContext().spanId, 'the bridge continues the client');
      assert.equal(server.spanContext().traceId, client.spanContext().traceId);
      const tool = tracing.one('execute_tool add');
      assert.equal(parentIdOf(tool), server.spanContext().spanId);
      assert.equal(client.attributes['mcp.method.name'], 'tools/call');
      assert.equal(client.attributes['gen_ai.tool.name'], 'add');
      assert.equal(client.attributes['network.transport'], 'tcp');
      assert.equal(client.attributes['toolbus.mcp.server'], 'bridge');
      assert.equal(typeof server.attributes['jsonrpc.request.id'], 'string');

      tracing.reset();
      const failed = await session.callTool('explode', {});
      assert.equal(failed.isError, true);
      for (const kind of [SpanKind.CLIENT, SpanKind.SERVER]) {
        const span = tracing.spans().find((s) => s.name === 'tools/call explode' && s.kind === kind)!;
        assert.equal(span.attributes['error.type'], 'tool-error');
        assert.equal(span.status.code, SpanStatusCode.ERROR);
      }
    });
  }
});
