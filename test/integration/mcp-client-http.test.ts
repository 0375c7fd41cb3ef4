/**
 * `mcpServerTools` over HTTP against real servers on 127.0.0.1: the fixture with 2025 sessions (restarted
 * mid-run, so every session expires), the fixture on the 2026-07-28 stateless revision, and the published
 * reference server over legacy SSE.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { McpSession, mcpServerTools } from '../../src/adapters/mcp/index.js';
import { ToolbusError } from '../../src/errors/index.js';
import { EVERYTHING_SERVER, ROOT, startHttpFixture, waitFor } from '../fixtures/mcp-spawn.js';

describe('mcpServerTools over Streamable HTTP', { timeout: 60_000 }, () => {
  test('2025 sessions: after a server restart the session is re-established; only idempotent calls are retried', async (t) => {
    let server = await startHttpFixture('sessions');
    t.after(() => server.stop());
    const mcp = await mcpServerTools({ url: server.url, protocol: 'legacy', id: 'http-fixture' });
    t.after(() => mcp.close());
    assert.equal(mcp.session.protocolEra, 'legacy');
    const firstPid = (await mcp.call('pid', {})).content;
    assert.equal(firstPid, String(server.pid));
    assert.equal((await mcp.call('counter', {})).content, '1');

    // Restart on the same port: the old session id is now unknown to the server (404).
    const port = server.port;
    await server.stop();
    server = await startHttpFixture('sessions', port);

    const retried = await mcp.call('pid', {});
    assert.equal(retried.isError, false, retried.content);
    assert.equal(retried.content, String(server.pid));
    assert.equal(mcp.session.connectCount, 2);

    await server.stop();
    server = await startHttpFixture('sessions', port);
    const notRetried = await mcp.call('counter', {});
    assert.equal(notRetried.isError, true);
    assert.equal(notRetried.error?.code, 'unavailable');
    assert.match(
      notRetried.content,
      /MCP server 'http-fixture' restarted or its session expired during the call/,
    );
    assert.match(notRetried.content, /not retried because the tool is not annotated read-only or idempotent/);
    // Reconnected: the next call runs on the new server (a fresh counter).
    const next = await mcp.call('counter', {});
    assert.equal(next.isError, false, next.content);
    assert.equal(next.content, '1');
  });

  test('2026-07-28 stateless server: modern era, calls and list_changed over subscriptions/listen', async (t) => {
    const server = await startHttpFixture('modern');
    t.after(() => server.stop());
    const mcp = await mcpServerTools({ url: server.url });
    t.after(() => mcp.close());
    assert.equal(mcp.session.protocolEra, 'modern');
    assert.equal((await mcp.call('add', { a: 1, b: 2 })).content, '{"sum":3}');
    const changed = new Promise<void>((resolve) => {
      const off = mcp.onChange((tools) => {
        if (tools.some((tool) => tool.name === 'late')) {
          off();
          resolve();
        }
      });
    });
    await mcp.call('add_tool', { name: 'late' });
    await changed;
    assert.equal((await mcp.call('late', {})).content, 'hello from late');
  });

  test('headers are sent on every request (a bearer token the server requires)', async (t) => {
    const server = await startHttpFixture('modern', 0, { token: 's3cret' });
    t.after(() => server.stop());
    await assert.rejects(mcpServerTools({ url: server.url }), (e: unknown) => {
      assert.equal((e as { code?: string }).code, 'unavailable');
      return true;
    });
    const mcp = await mcpServerTools({ url: server.url, headers: { Authorization: 'Bearer s3cret' } });
    t.after(() => mcp.close());
    assert.equal((await mcp.call('pid', {})).content, String(server.pid));
  });

  test('a stateless server restart is transparent, even for tools that are not idempotent', async (t) => {
    let server = await startHttpFixture('modern');
    t.after(() => server.stop());
    const mcp = await mcpServerTools({ url: server.url });
    t.after(() => mcp.close());
    assert.equal((await mcp.call('counter', {})).content, '1');
    const port = server.port;
    await server.stop();
    server = await startHttpFixture('modern', port);
    const after = await mcp.call('counter', {});
    assert.equal(after.isError, false, after.content);
    assert.equal(after.content, '1');
  });
});

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

test(
  'an unreachable server: the call says it could not be reached, after one connect attempt',
  { timeout: 30_000 },
  async (t) => {
    // Accepts and drops every connection, counting them: each connect attempt is one connection.
    let connections = 0;
    const dead = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => dead.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => dead.close(() => resolve())));
    const { port } = dead.address() as { port: number };
    const session = new McpSession({ url: `http://127.0.0.1:${port}/mcp`, protocol: 'legacy' });
    t.after(() => session.close());
    await assert.rejects(session.callTool('counter', {}), (e: unknown) => {
      assert.ok(e instanceof ToolbusError);
      assert.equal(e.code, 'unavailable');
      assert.match(e.message, /could not be reached/);
      assert.doesNotMatch(e.message, /restarted|not retried/);
      return true;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(connections, 1, 'the failed call started another connect attempt');
    await assert.rejects(session.listTools(), /could not be reached/);
    assert.equal(connections, 2, 'the failed listing connected twice');
    assert.equal(session.connectCount, 0);
  },
);

test('legacy SSE transport against the published reference server', { timeout: 30_000 }, async (t) => {
  const port = await freePort();
  const child = spawn(process.execPath, [EVERYTHING_SERVER, 'sse'], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  t.after(async () => {
    child.kill('SIGKILL');
    await exited;
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  assert.ok(await waitFor(() => /running on port/.test(stderr), 15_000), `server did not start: ${stderr}`);
  const mcp = await mcpServerTools({
    url: `http://127.0.0.1:${port}/sse`,
    transport: 'sse',
    protocol: 'legacy',
  });
  t.after(() => mcp.close());
  const echo = await mcp.call('echo', { message: 'over sse' });
  assert.equal(echo.isError, false, echo.content);
  assert.match(echo.content, /over sse/);
});
