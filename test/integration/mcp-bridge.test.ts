/**
 * The MCP server bridge checked with the official MCP client (`@modelcontextprotocol/client`): list,
 * call, errors, bad arguments, cancel and `list_changed`, in-process (a bus tool service included) and
 * over Streamable HTTP on 127.0.0.1 in both protocol eras.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Client,
  InMemoryTransport,
  StreamableHTTPClientTransport,
  type Tool,
} from '@modelcontextprotocol/client';
import { z } from 'zod';
import { createMcpHttpHandler, createMcpServer } from '../../src/adapters/mcp/index.js';
import { MemoryBus } from '../../src/bus/index.js';
import { DynamicToolService, createToolServiceTool } from '../../src/services/index.js';
import { FunctionTool, LiveToolSet, type Tool as ToolbusTool } from '../../src/tools/index.js';
import { waitFor } from '../fixtures/mcp-spawn.js';
import { listenMcp } from '../support/mcp-http.js';

interface Probe {
  aborted: boolean;
  started: boolean;
}

function makeTools(probe: Probe): ToolbusTool[] {
  return [
    new FunctionTool(({ a, b }: { a: number; b: number }) => a + b, {
      name: 'add',
      description: 'Adds two numbers',
      parameters: z.object({ a: z.number(), b: z.number().describe('second') }),
      annotations: { readOnly: true, idempotent: true },
    }),
    new FunctionTool(
      () => {
        throw new Error('disk on fire');
      },
      { name: 'explode', description: 'Always fails', parameters: z.object({}) },
    ),
    new FunctionTool(
      (_args: Record<string, never>, ctx) =>
        new Promise((resolve, reject) => {
          probe.started = true;
          const timer = setTimeout(() => resolve('finished'), 10_000);
          ctx.signal.addEventListener(
            'abort',
            () => {
              probe.aborted = true;
              clearTimeout(timer);
              reject(new Error('aborted'));
            },
            { once: true },
          );
        }),
      { name: 'wait', description: 'Waits until cancelled', parameters: z.object({}) },
    ),
  ];
}

function callText(result: unknown): string {
  const content = (result as { content: { type: string; text?: string }[] }).content;
  return content.map((c) => c.text ?? '').join('');
}

async function nextToolList(client: Client, changes: Tool[][], count: number): Promise<Tool[]> {
  assert.ok(await waitFor(() => changes.length >= count, 10_000, 20), 'no tools/list_changed arrived');
  void client;
  return changes[count - 1] as Tool[];
}

describe('createMcpServer with the official client (in-memory transport)', { timeout: 30_000 }, () => {
  test('list, call, error, bad arguments, unknown tool, cancel and list_changed', async (t) => {
    const probe: Probe = { aborted: false, started: false };
    const live = new LiveToolSet(makeTools(probe));
    const server = createMcpServer(live, { name: 'bridge-test' });
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const changes: Tool[][] = [];
    const client = new Client(
      { name: 'test', version: '1' },
      { listChanged: { tools: { debounceMs: 0, onChanged: (_e, tools) => tools && changes.push(tools) } } },
    );
    await client.connect(clientSide);
    t.after(() => client.close());

    const { tools } = await client.listTools();
    assert.deepEqual(
      tools.map((tool) => tool.name),
      ['add', 'explode', 'wait'],
    );
    const add = tools[0] as Tool;
    assert.deepEqual(add.inputSchema.required, ['a', 'b']);
    assert.equal((add.inputSchema.properties?.b as { description?: string }).description, 'second');
    assert.deepEqual(add.annotations, { readOnlyHint: true, idempotentHint: true });

    const sum = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
    assert.equal(sum.isError, undefined);
    assert.equal(callText(sum), '5');

    const failed = await client.callTool({ name: 'explode', arguments: {} });
    assert.equal(failed.isError, true);
    assert.match(callText(failed), /disk on fire/);

    const bad = await client.callTool({ name: 'add', arguments: { a: 'two' } });
    assert.equal(bad.isError, true);
    assert.match(callText(bad), /'a'/);

    await assert.rejects(client.callTool({ name: 'missing', arguments: {} }), /unknown tool 'missing'/);

    const controller = new AbortController();
    const pending = client.callTool({ name: 'wait', arguments: {} }, { signal: controller.signal });
    assert.ok(await waitFor(() => probe.started, 5000, 10));
    controller.abort();
    await assert.rejects(pending);
    assert.ok(await waitFor(() => probe.aborted, 5000, 10), "the tool's signal never aborted");

    live.replace([
      ...makeTools(probe),
      new FunctionTool(() => 'hi', { name: 'greet', description: 'Greets', parameters: z.object({}) }),
    ]);
    const after = await nextToolList(client, changes, 1);
    assert.ok(after.some((tool) => tool.name === 'greet'));
    assert.equal(callText(await client.callTool({ name: 'greet', arguments: {} })), 'hi');
  });

  test('a bus tool service is served to MCP clients like any other tool', async (t) => {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    const service = new DynamicToolService({
      bus,
      id: 'joke-service',
      topic: 'joke',
      invoke: (user, config, args) => `A ${String(config.style)} joke about ${String(args.topic)}`,
    });
    await service.start();
    t.after(() => service.stop());
    const { tool } = createToolServiceTool({
      bus,
      service: {
        id: 'joke-service',
        'request-queue': 'non-persistent://tg/request/joke',
        'response-queue': 'non-persistent://tg/response/joke',
        'config-params': [{ name: 'style', required: true }],
      },
      tool: {
        type: 'tool-service',
        name: 'tell-joke',
        description: 'Tells a joke',
        service: 'joke-service',
        style: 'pun',
        arguments: [{ name: 'topic', type: 'string', description: 'What about' }],
      },
    });
    const server = createMcpServer(new LiveToolSet([tool]));
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(clientSide);
    t.after(() => client.close());
    const result = await client.callTool({ name: 'tell-joke', arguments: { topic: 'buses' } });
    assert.equal(result.isError, undefined, callText(result));
    assert.equal(callText(result), 'A pun joke about buses');
  });
});

describe('createMcpHttpHandler with the official client over HTTP', { timeout: 30_000 }, () => {
  for (const mode of ['legacy', 'auto'] as const) {
    test(`${mode === 'auto' ? '2026-07-28 (stateless)' : '2025 (sessions)'}: list, call, error, cancel, list_changed`, async (t) => {
      const probe: Probe = { aborted: false, started: false };
      const live = new LiveToolSet(makeTools(probe));
      const handler = createMcpHttpHandler(live);
      const url = new URL(await listenMcp(t, handler));
      const changes: Tool[][] = [];
      const client = new Client(
        { name: 'test', version: '1' },
        {
          versionNegotiation: { mode },
          listChanged: { tools: { debounceMs: 0, onChanged: (_e, tools) => tools && changes.push(tools) } },
        },
      );
      await client.connect(new StreamableHTTPClientTransport(url));
      t.after(() => client.close());
      assert.equal(client.getProtocolEra(), mode === 'auto' ? 'modern' : 'legacy');

      assert.equal((await client.listTools()).tools.length, 3);
      assert.equal(callText(await client.callTool({ name: 'add', arguments: { a: 1, b: 1 } })), '2');
      const failed = await client.callTool({ name: 'explode', arguments: {} });
      assert.equal(failed.isError, true);

      const controller = new AbortController();
      const pending = client.callTool({ name: 'wait', arguments: {} }, { signal: controller.signal });
      assert.ok(await waitFor(() => probe.started, 5000, 10));
      controller.abort();
      await assert.rejects(pending);
      assert.ok(await waitFor(() => probe.aborted, 5000, 10), "the tool's signal never aborted");

      if (mode === 'legacy') {
        // Wait until the session's GET stream (where list_changed is pushed) is open.
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      live.replace([
        ...makeTools(probe),
        new FunctionTool(() => 'hi', { name: 'greet', description: 'Greets', parameters: z.object({}) }),
      ]);
      const after = await nextToolList(client, changes, 1);
      assert.ok(after.some((tool) => tool.name === 'greet'));
    });
  }
});

describe('createMcpHttpHandler on bad requests', { timeout: 30_000 }, () => {
  test('an oversize body gets 413, bad JSON 400, an unknown session 404, a closed endpoint 503; the handler never rejects', async (t) => {
    const handler = createMcpHttpHandler(new LiveToolSet(makeTools({ aborted: false, started: false })));
    const rejections: unknown[] = [];
    const http = createServer((req, res) => {
      handler(req, res).catch((error: unknown) => rejections.push(error));
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    t.after(async () => {
      await handler.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    });
    const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

    const big = await fetch(url, { method: 'POST', headers, body: 'x'.repeat(5 * 1024 * 1024) });
    assert.equal(big.status, 413);
    const bigBody = (await big.json()) as { error: { message: string } };
    assert.match(bigBody.error.message, /must not exceed \d+ bytes/);

    const bad = await fetch(url, { method: 'POST', headers, body: '{"jsonrpc":' });
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: { code: number } }).error.code, -32700);

    const stale = await fetch(url, {
      method: 'POST',
      headers: { ...headers, 'mcp-session-id': 'no-such-session' },
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    });
    assert.equal(stale.status, 404);
    const staleBody = (await stale.json()) as { error: { code: number; message: string } };
    assert.equal(staleBody.error.code, -32001);
    assert.match(staleBody.error.message, /Session not found: 'no-such-session'/);

    await handler.close();
    const late = await fetch(url, { method: 'POST', headers, body: '{}' });
    assert.equal(late.status, 503);
    assert.equal(((await late.json()) as { error: { code: number } }).error.code, -32000);
    assert.deepEqual(rejections, []);
  });
});
