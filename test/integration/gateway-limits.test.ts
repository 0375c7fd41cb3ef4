/**
 * The gateway's bounds and guards, in-process with small limits: slow or trickling clients are cut off,
 * connections are capped, allowed hosts and origins (with CORS) get in and nothing else does, and error
 * answers never carry a path of this machine.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { z } from 'zod';
import {
  FunctionTool,
  LiveToolSet,
  MemoryConfigStore,
  ToolbusError,
  type ConfigStore,
} from '../../src/index.js';
import { createGateway, type GatewayOptions } from '../../src/gateway/index.js';
import { rawRequest } from '../support/raw-http.js';

const echo = new FunctionTool(async ({ text }: { text: string }) => `echo: ${text}`, {
  name: 'echo',
  description: 'Echo the text',
  parameters: z.object({ text: z.string() }),
});

async function start(t: { after: (fn: () => Promise<void>) => void }, extra: Partial<GatewayOptions> = {}) {
  const gateway = createGateway({ tools: new LiveToolSet([echo]), token: 't0ken', ...extra });
  const url = await gateway.listen({ port: 0 });
  t.after(() => gateway.close({ graceMs: 10 }));
  return url;
}

const AUTH = { authorization: 'Bearer t0ken' };

/** Opens a raw connection and resolves with what it received once the server closed it (or after `ms`). */
function socketTo(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => resolve(socket));
    socket.on('error', reject);
  });
}

function closedWithin(socket: Socket, ms: number): Promise<{ closed: boolean; received: string }> {
  return new Promise((resolve) => {
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString()));
    const timer = setTimeout(() => resolve({ closed: false, received }), ms);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ closed: true, received });
    });
    socket.on('error', () => undefined);
  });
}

describe('gateway limits and guards', () => {
  test('a trickling body is cut off at bodyTimeoutMs with 408', async (t) => {
    const url = await start(t, { bodyTimeoutMs: 400, headersTimeoutMs: 400 });
    const socket = await socketTo(url);
    t.after(() => void socket.destroy());
    socket.write(
      'POST /api/v1/tools/echo/invoke HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer t0ken\r\n' +
        'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{',
    );
    const trickle = setInterval(() => socket.writable && socket.write(' '), 100);
    t.after(() => clearInterval(trickle));
    const outcome = await closedWithin(socket, 5_000);
    clearInterval(trickle);
    assert.equal(outcome.closed, true, 'the connection was cut');
    assert.match(outcome.received, /^HTTP\/1\.1 408/);
  });

  test('headers that never finish are cut off at headersTimeoutMs', async (t) => {
    const url = await start(t, { headersTimeoutMs: 300, bodyTimeoutMs: 300 });
    const socket = await socketTo(url);
    t.after(() => void socket.destroy());
    socket.write('GET /api/v1/tools HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
    const outcome = await closedWithin(socket, 5_000);
    assert.equal(outcome.closed, true);
  });

  test('connections beyond maxConnections are closed at once; the held ones still work', async (t) => {
    const url = await start(t, { maxConnections: 2 });
    const held = [await socketTo(url), await socketTo(url)];
    t.after(() => held.forEach((s) => s.destroy()));
    const extra = await socketTo(url);
    const outcome = await closedWithin(extra, 3_000);
    assert.equal(outcome.closed, true, 'the third connection was dropped');
    // A held connection still gets its answer.
    const answer = closedWithin(held[0]!, 3_000);
    held[0]!.write(
      `GET /api/v1/tools HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer t0ken\r\nConnection: close\r\n\r\n`,
    );
    assert.match((await answer).received, /^HTTP\/1\.1 200/);
  });

  test('allowed hosts and origins get in, with CORS headers and a preflight answer; others get none', async (t) => {
    const url = await start(t, {
      allowedHosts: ['toolbus.example.com'],
      allowedOrigins: ['https://app.example.com'],
    });
    const viaProxy = await rawRequest(url, '/api/v1/tools', {
      headers: { ...AUTH, host: 'toolbus.example.com' },
    });
    assert.equal(viaProxy.status, 200);
    const other = await rawRequest(url, '/api/v1/tools', {
      headers: { ...AUTH, host: 'toolbus.example.org' },
    });
    assert.equal(other.status, 403);
    const garbage = await rawRequest(url, '/api/v1/tools', {
      headers: { ...AUTH, host: '127.0.0.1:80, evil' },
    });
    assert.equal(garbage.status, 403, 'a Host that is not HOST[:PORT]');

    const preflight = await rawRequest(url, '/api/v1/tools/echo/invoke', {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers['access-control-allow-origin'], 'https://app.example.com');
    assert.match(String(preflight.headers['access-control-allow-headers']), /authorization/);
    assert.match(String(preflight.headers['access-control-allow-methods']), /POST/);

    const call = await rawRequest(url, '/api/v1/tools/echo/invoke', {
      method: 'POST',
      headers: { ...AUTH, origin: 'https://app.example.com', 'content-type': 'application/json' },
      body: '{"text":"hi"}',
    });
    assert.equal(call.status, 200);
    assert.equal(call.headers['access-control-allow-origin'], 'https://app.example.com');
    assert.equal(call.headers['vary'], 'Origin');

    const sameOrigin = await rawRequest(url, '/api/v1/tools', { headers: AUTH });
    assert.equal(
      sameOrigin.headers['access-control-allow-origin'],
      undefined,
      'no CORS headers unless an origin is allowed',
    );
    const denied = await rawRequest(url, '/api/v1/tools', {
      headers: { ...AUTH, origin: 'https://evil.example.com' },
    });
    assert.equal(denied.status, 403);
    assert.equal(denied.headers['access-control-allow-origin'], undefined);
  });

  test('errors never carry a path of this machine; unexpected failures are 500 internal, logged, without details', async (t) => {
    const failures: Error[] = [];
    const broken = {
      list: async () => {
        throw new ToolbusError(
          'store-error',
          `unable to open database file '${process.cwd()}/.toolbus/config.db'`,
        );
      },
      get: async () => {
        throw new TypeError(`Cannot read properties of undefined at ${process.cwd()}/src/secret.ts:10`);
      },
    } as unknown as ConfigStore;
    const url = await start(t, { store: broken, onError: (e) => failures.push(e) });
    const listed = await rawRequest(url, '/api/v1/config/tool', { headers: AUTH });
    assert.equal(listed.status, 500);
    const listError = (JSON.parse(listed.body) as { error: { code: string; message: string } }).error;
    assert.equal(listError.code, 'store-error');
    assert.match(listError.message, /unable to open database file '…\/config\.db'/);
    assert.ok(!listed.body.includes(process.cwd()));

    const got = await rawRequest(url, '/api/v1/config/tool/x', { headers: AUTH });
    assert.equal(got.status, 500);
    const getError = (JSON.parse(got.body) as { error: { code: string; message: string } }).error;
    assert.equal(getError.code, 'internal');
    assert.doesNotMatch(got.body, /secret\.ts|Cannot read/);
    assert.equal(failures.length, 1);
    assert.match(failures[0]!.message, /Cannot read properties/);
  });

  test('a config PUT of an item outside the allowlist is 400 not-allowed, and inside it is stored', async (t) => {
    const store = new MemoryConfigStore();
    const url = await start(t, { store, allowlist: { commands: ['node'], env: ['WEATHER_*'] } });
    const put = (path: string, body: unknown) =>
      rawRequest(url, path, {
        method: 'PUT',
        headers: { ...AUTH, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    assert.equal((await put('/api/v1/config/mcp/a', { command: 'node', args: ['server.js'] })).status, 200);
    const refused = await put('/api/v1/config/mcp/b', { command: 'bash' });
    assert.equal(refused.status, 400);
    assert.match(refused.body, /not-allowed.*'bash'.*TOOLBUS_ALLOW_COMMANDS/);
    const headers = (env: string) => ({ type: 'http', url: 'http://x', headers: { A: { env } } });
    assert.equal((await put('/api/v1/config/tool/w', headers('WEATHER_TOKEN'))).status, 200);
    const leak = await put('/api/v1/config/tool/h', headers('HOME'));
    assert.equal(leak.status, 400);
    assert.match(leak.body, /'HOME'.*TOOLBUS_ALLOW_ENV/);
    assert.equal(await store.get('mcp', 'b'), undefined);
    assert.equal(await store.get('tool', 'h'), undefined);
  });
});
