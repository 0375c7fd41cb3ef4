/**
 * Bounded 2025-era sessions of `createMcpHttpHandler` over real HTTP on 127.0.0.1: per-client and total
 * caps (503 naming the cap, no eviction, concurrent initializes cannot overshoot), idle expiry, and a
 * body parsed by the caller (`request.parsedBody`) used without reading the stream again.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { z } from 'zod';
import {
  createMcpHttpHandler,
  type McpHttpHandler,
  type McpHttpHandlerOptions,
  type McpHttpRequest,
} from '../../src/adapters/mcp/index.js';
import { FunctionTool, LiveToolSet } from '../../src/tools/index.js';
import { ToolbusError } from '../../src/errors/index.js';

const PROTOCOL = '2025-06-18';
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

function makeTools(): LiveToolSet {
  return new LiveToolSet([
    new FunctionTool(({ a, b }: { a: number; b: number }) => a + b, {
      name: 'add',
      description: 'Adds two numbers',
      parameters: z.object({ a: z.number(), b: z.number() }),
    }),
  ]);
}

type Mount = (handler: McpHttpHandler) => (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

/** Serves a fresh handler on 127.0.0.1:0, torn down after the test; returns its `/mcp` URL. */
async function serve(
  t: TestContext,
  options: McpHttpHandlerOptions,
  mount: Mount = (handler) => (req, res) => void handler(req, res),
): Promise<{ url: string; handler: McpHttpHandler }> {
  const handler = createMcpHttpHandler(makeTools(), options);
  const http = createServer(mount(handler));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    await handler.close();
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`, handler };
}

const initializeBody = (id = 1): unknown => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'test', version: '1' } },
});

interface Reply {
  status: number;
  sessionId: string | null;
  text: string;
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...HEADERS, ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, sessionId: res.headers.get('mcp-session-id'), text: await res.text() };
}

/** A 2025-era `initialize` (plus `notifications/initialized` when it succeeded). */
async function initialize(url: string, headers: Record<string, string> = {}): Promise<Reply> {
  const reply = await post(url, initializeBody(), headers);
  if (reply.status === 200 && reply.sessionId) {
    const ack = await post(
      url,
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { ...headers, 'mcp-session-id': reply.sessionId, 'mcp-protocol-version': PROTOCOL },
    );
    assert.equal(ack.status, 202, ack.text);
  }
  return reply;
}

async function listTools(url: string, sessionId: string): Promise<Reply> {
  return post(
    url,
    { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    { 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL },
  );
}

function errorOf(reply: Reply): { code: number; message: string } {
  return (JSON.parse(reply.text) as { error: { code: number; message: string } }).error;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('createMcpHttpHandler session caps', { timeout: 20_000 }, () => {
  test('at maxSessionsPerClient a new initialize gets 503 naming the cap; live sessions are not evicted; DELETE frees a slot', async (t) => {
    const { url } = await serve(t, { maxSessionsPerClient: 3 });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const reply = await initialize(url);
      assert.equal(reply.status, 200, reply.text);
      assert.ok(reply.sessionId);
      ids.push(reply.sessionId);
    }

    const refused = await initialize(url);
    assert.equal(refused.status, 503);
    assert.equal(refused.sessionId, null);
    const body = JSON.parse(refused.text) as { jsonrpc: string; id: unknown };
    assert.equal(body.jsonrpc, '2.0');
    assert.equal(body.id, null);
    const error = errorOf(refused);
    assert.equal(error.code, -32000);
    assert.match(error.message, /client '127\.0\.0\.1' already has 3 open sessions/);
    assert.match(error.message, /'maxSessionsPerClient': 3/);
    assert.match(error.message, /DELETE \/mcp/);
    assert.match(error.message, /expire after 10 minutes/);

    for (const id of ids) {
      const reply = await listTools(url, id);
      assert.equal(reply.status, 200, `session ${id} was evicted: ${reply.text}`);
      assert.match(reply.text, /"name":"add"/);
    }

    const deleted = await fetch(url, {
      method: 'DELETE',
      headers: { 'mcp-session-id': ids[0] as string, 'mcp-protocol-version': PROTOCOL },
    });
    assert.equal(deleted.status, 200);
    await deleted.text();
    assert.equal((await listTools(url, ids[0] as string)).status, 404);

    const again = await initialize(url);
    assert.equal(again.status, 200, again.text);
    assert.equal((await initialize(url)).status, 503, 'the freed slot was taken again');
  });

  test('different clients have separate caps', async (t) => {
    const { url } = await serve(t, { maxSessionsPerClient: 2 }, (handler) => (req, res) => {
      const request: McpHttpRequest = { client: String(req.headers['x-client']) };
      void handler(req, res, request);
    });
    for (const client of ['alice', 'bob']) {
      for (let i = 0; i < 2; i++) {
        const reply = await initialize(url, { 'x-client': client });
        assert.equal(reply.status, 200, `${client} #${i}: ${reply.text}`);
      }
    }
    const refused = await initialize(url, { 'x-client': 'alice' });
    assert.equal(refused.status, 503);
    assert.match(errorOf(refused).message, /client 'alice' already has 2 open sessions/);
    assert.equal((await initialize(url, { 'x-client': 'carol' })).status, 200);
  });

  test('at maxSessions a new initialize gets 503 naming maxSessions, and concurrent initializes cannot overshoot it', async (t) => {
    const { url } = await serve(t, { maxSessions: 4, sessionIdleMs: 90_000 });
    const replies = await Promise.all(Array.from({ length: 12 }, () => post(url, initializeBody())));
    const accepted = replies.filter((reply) => reply.status === 200);
    const refused = replies.filter((reply) => reply.status === 503);
    assert.equal(accepted.length, 4);
    assert.equal(refused.length, 8);
    const message = errorOf(refused[0] as Reply).message;
    assert.match(message, /the endpoint already has 4 open sessions/);
    assert.match(message, /'maxSessions': 4/);
    assert.match(message, /expire after 1\.5 minutes/);
    for (const reply of accepted) {
      assert.equal((await listTools(url, reply.sessionId as string)).status, 200);
    }
  });

  test('a failed initialize does not hold a slot', async (t) => {
    const { url } = await serve(t, { maxSessionsPerClient: 1 });
    // Not acceptable (no text/event-stream in Accept): the transport answers 406 and no session exists.
    const failed = await post(url, initializeBody(), { accept: 'application/json' });
    assert.equal(failed.status, 406, failed.text);
    assert.equal((await initialize(url)).status, 200);
  });

  test('bad cap and idle options fail naming the option', () => {
    const tools = makeTools();
    for (const [options, name] of [
      [{ maxSessionsPerClient: 0 }, 'maxSessionsPerClient'],
      [{ maxSessions: 2.5 }, 'maxSessions'],
      [{ sessionIdleMs: -1 }, 'sessionIdleMs'],
    ] as const) {
      assert.throws(
        () => createMcpHttpHandler(tools, options),
        (error: unknown) =>
          error instanceof ToolbusError &&
          error.code === 'usage' &&
          error.message.includes(`option '${name}' must be a positive`),
      );
    }
  });
});

describe('createMcpHttpHandler idle sessions', { timeout: 20_000 }, () => {
  test('a session unused for sessionIdleMs is closed (404 later), a busy one survives', async (t) => {
    // Generous against a loaded machine: the busy one is used every 50 ms, well inside its 1 s.
    const { url } = await serve(t, { sessionIdleMs: 1_000 });
    const idle = await initialize(url);
    const busy = await initialize(url);
    assert.ok(idle.sessionId && busy.sessionId);

    const until = Date.now() + 2_500;
    while (Date.now() < until) {
      assert.equal((await listTools(url, busy.sessionId)).status, 200, 'the busy session expired');
      await sleep(50);
    }

    const gone = await listTools(url, idle.sessionId);
    assert.equal(gone.status, 404);
    assert.match(errorOf(gone).message, /Session not found/);
    assert.equal((await listTools(url, busy.sessionId)).status, 200);
  });

  test('an open GET stream keeps a session alive; once it closes the session expires', async (t) => {
    const { url } = await serve(t, { sessionIdleMs: 200 });
    const session = await initialize(url);
    assert.ok(session.sessionId);
    const controller = new AbortController();
    const stream = await fetch(url, {
      headers: {
        accept: 'text/event-stream',
        'mcp-session-id': session.sessionId,
        'mcp-protocol-version': PROTOCOL,
      },
      signal: controller.signal,
    });
    assert.equal(stream.status, 200);
    await sleep(600);
    assert.equal((await listTools(url, session.sessionId)).status, 200, 'expired with its stream open');

    controller.abort();
    await stream.body?.cancel().catch(() => undefined);
    await sleep(600);
    assert.equal((await listTools(url, session.sessionId)).status, 404);
  });

  test('an expired session frees its slot', async (t) => {
    const { url } = await serve(t, { sessionIdleMs: 100, maxSessionsPerClient: 1 });
    assert.equal((await initialize(url)).status, 200);
    const refused = await initialize(url);
    assert.equal(refused.status, 503);
    assert.match(errorOf(refused).message, /expire after 100 ms/);
    await sleep(400);
    assert.equal((await initialize(url)).status, 200);
  });
});

describe('createMcpHttpHandler with a body parsed by the caller', { timeout: 20_000 }, () => {
  /** Reads and parses the body itself, then hands the handler `parsed.envelope`, never the raw stream. */
  const envelopeMount: Mount = (handler) => async (req, res) => {
    let parsedBody: unknown;
    if (req.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      parsedBody = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { envelope: unknown }).envelope;
    }
    await handler(req, res, { parsedBody });
  };

  test('a 2025 initialize and tools/list are read from parsedBody, not the stream', async (t) => {
    const { url } = await serve(t, {}, envelopeMount);
    const init = await post(url, { envelope: initializeBody() });
    assert.equal(init.status, 200, init.text);
    assert.ok(init.sessionId, 'the initialize in parsedBody did not create a session');
    const list = await post(
      url,
      { envelope: { jsonrpc: '2.0', id: 2, method: 'tools/list' } },
      { 'mcp-session-id': init.sessionId, 'mcp-protocol-version': PROTOCOL },
    );
    assert.equal(list.status, 200, list.text);
    assert.match(list.text, /"name":"add"/);
  });

  for (const mode of ['legacy', 'auto'] as const) {
    test(`the official client (${mode === 'auto' ? '2026-07-28' : '2025'}) works behind a mount that consumed the stream`, async (t) => {
      const { url } = await serve(t, {}, (handler) => async (req, res) => {
        let parsedBody: unknown;
        if (req.method === 'POST') {
          const chunks: Buffer[] = [];
          for await (const chunk of req) chunks.push(chunk as Buffer);
          const text = Buffer.concat(chunks).toString('utf8');
          parsedBody = text ? JSON.parse(text) : undefined;
        }
        await handler(req, res, { parsedBody, client: 'tester' });
      });
      const client = new Client({ name: 'test', version: '1' }, { versionNegotiation: { mode } });
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      t.after(() => client.close());
      assert.equal(client.getProtocolEra(), mode === 'auto' ? 'modern' : 'legacy');
      assert.deepEqual(
        (await client.listTools()).tools.map((tool) => tool.name),
        ['add'],
      );
      const sum = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
      assert.deepEqual(sum.content, [{ type: 'text', text: '5' }]);
    });
  }
});
