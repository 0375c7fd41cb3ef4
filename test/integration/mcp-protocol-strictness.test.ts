/**
 * The JSON-RPC rules the bridge applies before the SDK: valid JSON that is no JSON-RPC message gets
 * -32600 Invalid Request (not -32700), a batch is refused on a 2025-06-18-or-later session (HTTP 400,
 * saying batching was removed) and still served on a 2025-03-26 one, checked with raw HTTP against the
 * handler and behind the gateway; and a real `toolbus mcp serve` child answers a malformed line with
 * -32700 (`id: null`) and a non-JSON-RPC line with -32600, and keeps serving (its config's resource and
 * prompt items included).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { createMcpHttpHandler, type McpHttpHandler } from '../../src/adapters/mcp/index.js';
import { SqliteConfigStore } from '../../src/config/sqlite/index.js';
import { createGateway } from '../../src/gateway/index.js';
import { FunctionTool, LiveToolSet } from '../../src/tools/index.js';
import { ROOT } from '../support/cli.js';
import { listenMcp } from '../support/mcp-http.js';

const tools = (): LiveToolSet =>
  new LiveToolSet([
    new FunctionTool(() => 'pong', { name: 'echo', description: 'Answers pong', parameters: z.object({}) }),
  ]);

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

interface Reply {
  status: number;
  body: unknown;
  session: string | null;
}

async function post(url: string, body: string, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(url, { method: 'POST', headers: { ...HEADERS, ...headers }, body });
  const text = await res.text();
  // An SSE answer carries its JSON-RPC messages on `data:` lines.
  const data = text.startsWith('{') || text.startsWith('[') ? text : /^data: (.+)$/m.exec(text)?.[1];
  return {
    status: res.status,
    body: data ? JSON.parse(data) : text,
    session: res.headers.get('mcp-session-id'),
  };
}

async function openSession(
  url: string,
  version: string,
  headers: Record<string, string> = {},
): Promise<string> {
  const init = await post(
    url,
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
    headers,
  );
  assert.equal(init.status, 200, JSON.stringify(init.body));
  assert.ok(init.session);
  const ack = await post(url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), {
    ...headers,
    'mcp-session-id': init.session,
    'mcp-protocol-version': version,
  });
  assert.equal(ack.status, 202);
  return init.session;
}

type Mounted = { url: string; handler: McpHttpHandler };

async function direct(t: { after: (fn: () => Promise<void>) => void }): Promise<Mounted> {
  const handler = createMcpHttpHandler(tools());
  return { url: await listenMcp(t, handler), handler };
}

async function behindGateway(t: { after: (fn: () => Promise<void>) => void }): Promise<Mounted> {
  const handler = createMcpHttpHandler(tools());
  const gateway = createGateway({ tools: tools(), noAuth: true, mcpHandler: handler });
  const base = await gateway.listen({ port: 0 });
  t.after(async () => {
    await gateway.close();
    await handler.close();
  });
  return { url: `${base}/mcp`, handler };
}

for (const [where, mount] of [
  ['the handler', direct],
  ['the gateway', behindGateway],
] as const) {
  describe(`JSON-RPC strictness over HTTP (${where})`, { timeout: 30_000 }, () => {
    test('valid JSON that is not JSON-RPC gets 400 and -32600 with its id; invalid JSON gets -32700', async (t) => {
      const { url } = await mount(t);
      const noVersion = await post(url, '{"id":2,"method":"ping"}');
      assert.equal(noVersion.status, 400);
      const error = noVersion.body as { id: unknown; error: { code: number; message: string } };
      assert.equal(error.error.code, -32600);
      assert.equal(error.id, 2);
      assert.match(error.error.message, /field 'jsonrpc' must be "2\.0", got nothing/);
      const session = await openSession(url, '2025-11-25');
      const onSession = await post(url, '{"jsonrpc":"2.0","id":3,"method":7}', {
        'mcp-session-id': session,
        'mcp-protocol-version': '2025-11-25',
      });
      assert.equal(onSession.status, 400);
      assert.equal((onSession.body as { error: { code: number } }).error.code, -32600);
      assert.match((onSession.body as { error: { message: string } }).error.message, /'method' must be/);
      const notJson = await post(url, '{"jsonrpc":"2.0",');
      assert.equal(notJson.status, 400);
      assert.equal((notJson.body as { error: { code: number }; id: unknown }).error.code, -32700);
      assert.equal((notJson.body as { id: unknown }).id, null);
    });

    test('a batch is refused on a 2025-11-25 session and served on a 2025-03-26 one', async (t) => {
      const { url } = await mount(t);
      const batch = JSON.stringify([
        { jsonrpc: '2.0', id: 2, method: 'ping' },
        { jsonrpc: '2.0', id: 3, method: 'ping' },
      ]);
      const modern = await openSession(url, '2025-11-25');
      const refused = await post(url, batch, {
        'mcp-session-id': modern,
        'mcp-protocol-version': '2025-11-25',
      });
      assert.equal(refused.status, 400);
      const error = (refused.body as { error: { code: number; message: string } }).error;
      assert.equal(error.code, -32600);
      assert.match(error.message, /batches were removed in protocol revision 2025-06-18/);
      assert.match(error.message, /speaks 2025-11-25/);
      // The session still serves single messages.
      const ping = await post(url, '{"jsonrpc":"2.0","id":4,"method":"ping"}', {
        'mcp-session-id': modern,
        'mcp-protocol-version': '2025-11-25',
      });
      assert.deepEqual(ping.body, { jsonrpc: '2.0', id: 4, result: {} });

      const old = await openSession(url, '2025-03-26');
      const served = await fetch(url, {
        method: 'POST',
        headers: { ...HEADERS, 'mcp-session-id': old, 'mcp-protocol-version': '2025-03-26' },
        body: batch,
      });
      assert.equal(served.status, 200);
      const answers = [...(await served.text()).matchAll(/^data: (.+)$/gm)].map(
        (m) => JSON.parse(m[1]!) as { id: number; result: unknown },
      );
      assert.deepEqual(
        answers.map((a) => [a.id, a.result]),
        [
          [2, {}],
          [3, {}],
        ],
      );
      // A 2025-03-26 batch must still hold JSON-RPC messages.
      const badElement = await post(url, '[{"jsonrpc":"2.0","id":5,"method":"ping"},{"nope":1}]', {
        'mcp-session-id': old,
        'mcp-protocol-version': '2025-03-26',
      });
      assert.equal(badElement.status, 400);
      assert.match((badElement.body as { error: { message: string } }).error.message, /batch element 1/);
    });
  });
}

describe('toolbus mcp serve (stdio) answers bad lines and keeps serving', { timeout: 60_000 }, () => {
  test('-32700 for a malformed line, -32600 for a non-JSON-RPC one, then a normal session', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'toolbus-stdio-strict-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    // Config items it serves besides the tools: a resource, and a prompt tool item as an MCP prompt.
    const store = new SqliteConfigStore({ path: join(dir, 'config.db') });
    await store.put('resource', 'readme', { uri: 'docs://readme', text: '# Hello' });
    await store.put('tool', 'greet', {
      type: 'prompt',
      description: 'Greets someone',
      template: 'Say hello to {{who}}',
      arguments: [{ name: 'who', type: 'string', description: 'Whom' }],
    });
    await store.close();
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'mcp', 'serve', '--store', join(dir, 'config.db')],
      { cwd: ROOT, env: { ...process.env, TOOLBUS_HOME: dir }, stdio: ['pipe', 'pipe', 'ignore'] },
    );
    t.after(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    const lines = createInterface({ input: child.stdout });
    const replies: Record<string, unknown>[] = [];
    lines.on('line', (line) => replies.push(JSON.parse(line) as Record<string, unknown>));
    const next = async (count: number): Promise<Record<string, unknown>> => {
      for (let i = 0; i < 600 && replies.length < count; i++) await new Promise((r) => setTimeout(r, 50));
      const reply = replies[count - 1];
      assert.ok(reply, `no reply ${count}; got ${JSON.stringify(replies)}`);
      return reply;
    };
    child.stdin.write('{oops\n');
    const malformed = await next(1);
    assert.equal(malformed['id'], null);
    assert.equal((malformed['error'] as { code: number }).code, -32700);
    child.stdin.write('{"id":2,"method":"ping"}\n');
    const invalid = await next(2);
    assert.equal(invalid['id'], 2);
    assert.equal((invalid['error'] as { code: number }).code, -32600);
    assert.match((invalid['error'] as { message: string }).message, /'jsonrpc' must be "2\.0"/);
    child.stdin.write('[{"jsonrpc":"2.0","id":3,"method":"ping"}]\n');
    assert.equal(((await next(3))['error'] as { code: number }).code, -32600);
    child.stdin.write(
      `${JSON.stringify({
        jsonrpc: '2.0',
        id: 4,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      })}\n`,
    );
    assert.equal(((await next(4))['result'] as { protocolVersion: string }).protocolVersion, '2025-11-25');
    child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
    child.stdin.write('{"jsonrpc":"2.0","id":5,"method":"ping"}\n');
    assert.deepEqual(await next(5), { jsonrpc: '2.0', id: 5, result: {} });
    child.stdin.write(
      '{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"docs://readme"}}\n',
    );
    assert.deepEqual((await next(6))['result'], { contents: [{ uri: 'docs://readme', text: '# Hello' }] });
    child.stdin.write(
      '{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"greet","arguments":{"who":"Ada"}}}\n',
    );
    assert.deepEqual((await next(7))['result'], {
      description: 'Greets someone',
      messages: [{ role: 'user', content: { type: 'text', text: 'Say hello to Ada' } }],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.stdin.end();
    await exited;
  });
});
