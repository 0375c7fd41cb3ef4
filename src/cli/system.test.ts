import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { FunctionTool, ToolSet } from '../tools/index.js';
import { ToolbusError } from '../errors/index.js';
import { lazyMcpHandler, type LazyMcpHandler } from './system.js';

const tools = new ToolSet([
  new FunctionTool(({ a, b }: { a: number; b: number }) => a + b, {
    name: 'add',
    description: 'Adds two numbers',
    parameters: z.object({ a: z.number(), b: z.number() }),
  }),
]);

/** Serves `mcp.handle` on 127.0.0.1 as the gateway mounts it; returns the /mcp URL. */
async function serve(mcp: LazyMcpHandler, t: { after(fn: () => unknown): void }): Promise<URL> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    mcp.handle(req, res, { parsedBody: undefined, client: 'test' }).catch((error: unknown) => {
      res.writeHead(error instanceof ToolbusError && error.code === 'unavailable' ? 503 : 500).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
}

test('the lazy /mcp handler serves the tools over MCP once a client comes, and close() closes it', async (t) => {
  const errors: Error[] = [];
  const mcp = lazyMcpHandler(tools, { onError: (e) => void errors.push(e) });
  const url = await serve(mcp, t);
  // Two clients connect at once: both are served by the one handler the first request makes.
  const clients = [new Client({ name: 'a', version: '1' }), new Client({ name: 'b', version: '1' })];
  await Promise.all(clients.map((c) => c.connect(new StreamableHTTPClientTransport(url))));
  for (const client of clients) {
    const listed = await client.listTools();
    assert.deepEqual(
      listed.tools.map((tool) => tool.name),
      ['add'],
    );
    const result = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
    assert.deepEqual(result.content, [{ type: 'text', text: '5' }]);
  }
  await Promise.all(clients.map((c) => c.close()));
  await mcp.close();
  await mcp.close(); // idempotent
  await assert.rejects(
    mcp.handle({} as IncomingMessage, {} as ServerResponse, { parsedBody: undefined, client: 'test' }),
    (e: unknown) =>
      e instanceof ToolbusError && e.code === 'unavailable' && /MCP endpoint is closed/.test(e.message),
  );
  assert.deepEqual(errors, []);
});

test('a lazy /mcp handler closed before any request makes none; later requests are refused', async () => {
  const mcp = lazyMcpHandler(tools, { onError: () => undefined });
  await mcp.close();
  await assert.rejects(
    mcp.handle({} as IncomingMessage, {} as ServerResponse, { parsedBody: undefined, client: 'test' }),
    (e: unknown) => e instanceof ToolbusError && e.code === 'unavailable',
  );
});
