/**
 * @module HttpTool against a real HTTP server on 127.0.0.1: every method, path encoding, query vs body,
 * status errors, cancellation seen by the server, size cap, allowlist, env headers, JSON vs text.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { HttpStatusError, HttpTool, httpToolType } from '../../src/adapters/http/index.js';
import type { HttpToolOptions } from '../../src/adapters/http/index.js';
import { ToolError, ToolSet, type ToolProgress } from '../../src/tools/index.js';
import { ToolbusError } from '../../src/errors/index.js';
import type { JsonObject } from '../../src/schema/index.js';

interface Seen {
  method: string;
  /** The request target exactly as sent, percent-encoding included. */
  rawUrl: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A test server: records every request, answers by path, reports aborted responses. */
class TestServer {
  readonly seen: Seen[] = [];
  /** Resolves with the path of each request whose connection closed before the response ended. */
  readonly closedEarly: string[] = [];
  #closeWaiters: Array<{ path: string; done: () => void }> = [];
  #arrivalWaiters: Array<(path: string) => void> = [];
  readonly server: Server;
  port = 0;

  constructor() {
    this.server = createServer((req, res) => void this.#handle(req, res));
  }

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Waits (bounded) until the connection of a request to `path` closes before its response ended. */
  waitForEarlyClose(path: string, ms = 5_000): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the server never saw the connection of ${path} close`)),
        ms,
      );
      this.#closeWaiters.push({
        path,
        done: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  /** Waits (bounded) until the next request arrives. */
  waitForArrival(ms = 5_000): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no request arrived')), ms);
      this.#arrivalWaiters.push((path) => {
        clearTimeout(timer);
        resolve(path);
      });
    });
  }

  last(): Seen {
    const seen = this.seen.at(-1);
    assert.ok(seen, 'the server saw no request');
    return seen;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawUrl = req.url ?? '/';
    this.seen.push({
      method: req.method ?? '',
      rawUrl,
      headers: req.headers,
      body: Buffer.concat(chunks).toString(),
    });
    const path = rawUrl.split('?')[0] ?? '/';
    res.on('close', () => {
      if (!res.writableFinished) {
        this.closedEarly.push(path);
        const ready = this.#closeWaiters.filter((w) => w.path === path);
        this.#closeWaiters = this.#closeWaiters.filter((w) => w.path !== path);
        for (const waiter of ready) waiter.done();
      }
    });
    for (const waiter of this.#arrivalWaiters.splice(0)) waiter(path);
    const url = new URL(rawUrl, 'http://x');
    if (path.startsWith('/status/')) {
      const status = Number(path.slice('/status/'.length));
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: `failure number ${status}`, detail: 'x'.repeat(2_000) }));
    } else if (path.startsWith('/declared-status/')) {
      // As most frameworks answer: the whole body at once, so with a content-length.
      const body = JSON.stringify({ error: 'no such item', detail: 'y'.repeat(2_000) });
      res.writeHead(Number(path.slice('/declared-status/'.length)), {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
      });
      res.end(body);
    } else if (path === '/delayed') {
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('done');
      }, 50);
    } else if (path === '/echo-401') {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: `invalid credentials: ${String(req.headers['x-key'])}` }));
    } else if (path === '/slow' || path === '/slow-body') {
      if (path === '/slow-body') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('partial');
      }
      // Never finishes: only the client closing ends it (the test server closes everything at the end).
    } else if (path === '/big') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      // Streams without content-length until the client stops reading (bounded to 64 MiB).
      const chunk = Buffer.alloc(64 * 1024, 'a');
      let sent = 0;
      const pump = (): void => {
        while (sent < 1024 && !res.destroyed) {
          sent++;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        if (!res.destroyed) res.end();
      };
      pump();
    } else if (path === '/big-declared') {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(10 * 1024 * 1024) });
      res.write('a'.repeat(1024));
    } else if (path === '/text') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('hello, wörld');
    } else if (path === '/image') {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    } else if (path === '/chunked') {
      // Three pieces some time apart, with a declared length: progress a caller can show.
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '30' });
      let sent = 0;
      const next = (): void => {
        res.write('x'.repeat(10));
        if (++sent < 3) setTimeout(next, 30);
        else res.end();
      };
      next();
    } else if (path === '/not-json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"unterminated": ');
    } else if (path === '/empty') {
      res.writeHead(204);
      res.end();
    } else if (path === '/redirect') {
      res.writeHead(302, { location: url.searchParams.get('to') ?? '/' });
      res.end();
    } else {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          method: req.method,
          rawPath: path,
          query: [...url.searchParams.entries()],
          body: chunks.length > 0 ? (JSON.parse(Buffer.concat(chunks).toString()) as unknown) : null,
          authorization: req.headers.authorization ?? null,
          'x-static': req.headers['x-static'] ?? null,
        }),
      );
    }
  }
}

const server = new TestServer();
before(() => server.start());
after(() => server.stop());

function make(options: Partial<HttpToolOptions> & { path?: string }): HttpTool {
  return new HttpTool({
    name: 'probe',
    host: '127.0.0.1',
    port: server.port,
    returnType: 'json',
    jsonSchema: {
      type: 'object',
      properties: {
        id: { type: 'string' },
        q: { type: 'string' },
        limit: { type: 'integer' },
        tags: { type: 'array', items: { type: 'string' } },
        note: { type: 'string' },
        to: { type: 'string' },
      },
    },
    ...options,
  });
}

async function rejectsWith(
  promise: Promise<unknown>,
  code: string,
  fragment: string | RegExp,
): Promise<ToolbusError> {
  let caught: unknown;
  await assert.rejects(promise, (error: unknown) => {
    caught = error;
    return true;
  });
  assert.ok(caught instanceof ToolbusError, `expected a ToolbusError, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  if (typeof fragment === 'string') assert.ok(caught.message.includes(fragment), caught.message);
  else assert.match(caught.message, fragment);
  return caught;
}

describe('HttpTool methods: query for GET/DELETE, JSON body for POST/PUT/PATCH', () => {
  for (const method of ['GET', 'DELETE'] as const) {
    test(`${method} sends the non-path arguments as the query and no body`, async () => {
      const tool = make({ method, path: '/items/{id}' });
      const out = (await tool.runJson({ id: '42', q: 'a b&c=d', limit: 5, tags: ['x', 'y'] })) as JsonObject;
      assert.equal(out['method'], method);
      assert.equal(out['rawPath'], '/items/42');
      assert.deepEqual(out['query'], [
        ['q', 'a b&c=d'],
        ['limit', '5'],
        ['tags', 'x'],
        ['tags', 'y'],
      ]);
      assert.equal(server.last().body, '');
      assert.equal(server.last().headers['content-type'], undefined);
    });
  }

  for (const method of ['POST', 'PUT', 'PATCH'] as const) {
    test(`${method} sends the non-path arguments as a JSON body and no query`, async () => {
      const tool = make({ method, path: '/items/{id}' });
      const out = (await tool.runJson({ id: '7', q: 'text', limit: 3 })) as JsonObject;
      assert.equal(out['method'], method);
      assert.equal(out['rawPath'], '/items/7');
      assert.deepEqual(out['query'], []);
      assert.deepEqual(JSON.parse(server.last().body), { q: 'text', limit: 3 });
      assert.equal(server.last().headers['content-type'], 'application/json');
    });
  }

  test('the method defaults to POST, as in AutoGen', async () => {
    const tool = make({ method: undefined, path: '/x' });
    assert.equal(tool.method, 'POST');
    const out = (await tool.runJson({})) as JsonObject;
    assert.equal(out['method'], 'POST');
    assert.equal(server.last().body, '{}');
  });
});

describe('HttpTool arguments', () => {
  test('unset optionals are not sent: no null in the body, no empty key in the query', async () => {
    await make({ method: 'POST', path: '/o' }).runJson({ q: 'only' });
    assert.equal(server.last().body, '{"q":"only"}');
    await make({ method: 'GET', path: '/o' }).runJson({ q: 'only' });
    assert.equal(server.last().rawUrl, '/o?q=only');
  });

  test('path values are percent-encoded: spaces, non-ASCII and "/" stay inside their segment', async () => {
    const tool = make({ method: 'GET', path: '/users/{id}/files' });
    const out = (await tool.runJson({ id: 'José Müller/..' })) as JsonObject;
    assert.equal(out['rawPath'], '/users/Jos%C3%A9%20M%C3%BCller%2F../files');
    await tool.runJson({ id: '東京 tower?#' });
    assert.equal(server.last().rawUrl, '/users/%E6%9D%B1%E4%BA%AC%20tower%3F%23/files');
  });

  test('a path value of ".." is refused instead of climbing the path', async () => {
    const tool = make({ method: 'GET', path: '/users/{id}' });
    const before = server.seen.length;
    await rejectsWith(tool.runJson({ id: '..' }), 'invalid-arguments', "argument 'id' must not be '..'");
    assert.equal(server.seen.length, before);
  });

  test('a missing path argument is an invalid-arguments error before any request', async () => {
    const tool = make({ method: 'GET', path: '/users/{id}' });
    const before = server.seen.length;
    await rejectsWith(tool.runJson({ q: 'x' }), 'invalid-arguments', "argument 'id' is required");
    assert.equal(server.seen.length, before);
  });

  test('arguments are validated against json_schema before any request', async () => {
    const tool = make({ method: 'GET', path: '/v' });
    const before = server.seen.length;
    await rejectsWith(tool.runJson({ limit: 'many' }), 'invalid-arguments', "argument 'limit'");
    assert.equal(server.seen.length, before);
  });

  test('a single url template works like host/port/path', async () => {
    const tool = new HttpTool({
      name: 'by-url',
      url: `${server.base}/search/{term}?format=json`,
      method: 'GET',
      returnType: 'json',
      jsonSchema: {
        type: 'object',
        properties: { term: { type: 'string' }, page: { type: 'integer' } },
        required: ['term'],
      },
    });
    const out = (await tool.runJson({ term: 'a b', page: 2 })) as JsonObject;
    assert.equal(out['rawPath'], '/search/a%20b');
    assert.deepEqual(out['query'], [
      ['format', 'json'],
      ['page', '2'],
    ]);
  });
});

describe('HttpTool responses', () => {
  test('returnType json returns the parsed value, whose string form is real JSON text', async () => {
    const tool = make({ method: 'GET', path: '/j' });
    const value = await tool.runJson({ q: 'x' });
    assert.equal(typeof value, 'object');
    const text = tool.returnValueAsString(value);
    assert.deepEqual(JSON.parse(text), value);
    assert.ok(text.startsWith('{"method":"GET"'), text);
  });

  test('returnType text returns the body unchanged', async () => {
    const tool = make({ method: 'GET', path: '/text', returnType: 'text' });
    assert.equal(await tool.runJson({}), 'hello, wörld');
  });

  test('an image/* answer is an image part, whatever the returnType', async () => {
    const tool = make({ method: 'GET', path: '/image' });
    assert.deepEqual(await tool.runJson({}), { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' });
    const result = await new ToolSet([tool]).call('probe', {});
    assert.equal(result.content, '[image: image/png, 8 bytes]');
    assert.deepEqual(result.parts, [{ type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }]);
  });

  test('a body that streams in reports progress in bytes, with the declared total', async () => {
    const tool = make({ method: 'GET', path: '/chunked', returnType: 'text' });
    const reports: ToolProgress[] = [];
    const result = await new ToolSet([tool]).call('probe', {}, { onProgress: (p) => reports.push(p) });
    assert.equal(result.content, 'x'.repeat(30));
    assert.ok(reports.length >= 2, JSON.stringify(reports));
    assert.deepEqual(reports.at(-1), { progress: 30, total: 30, message: 'bytes received' });
    assert.ok(reports.every((r, i) => i === 0 || r.progress > reports[i - 1]!.progress));
  });

  test('returnType json with a body that is not JSON is a tool-error naming the problem', async () => {
    const tool = make({ method: 'GET', path: '/not-json' });
    await rejectsWith(tool.runJson({}), 'tool-error', 'not valid JSON');
  });

  test('an empty 204 answer is null for json', async () => {
    assert.equal(await make({ method: 'DELETE', path: '/empty' }).runJson({}), null);
  });

  for (const status of [404, 422, 500, 503]) {
    test(`HTTP ${status} is an error with the status and a body excerpt`, async () => {
      const tool = make({ method: 'GET', path: `/status/${status}` });
      const error = await rejectsWith(tool.runJson({}), 'tool-error', `returned HTTP ${status}`);
      assert.ok(error instanceof HttpStatusError);
      assert.ok(error instanceof ToolError);
      assert.equal(error.name, 'HttpStatusError');
      assert.equal(error.status, status);
      assert.equal(error.toolName, 'probe');
      assert.ok(error.message.includes(`failure number ${status}`), error.message);
      assert.ok(error.message.length < 1_000, 'the excerpt is bounded');
      assert.ok(error.bodyExcerpt.endsWith('…'));
    });
  }

  test('an error body with a content-length above the excerpt size is still quoted (its start)', async () => {
    const tool = make({ method: 'GET', path: '/declared-status/404' });
    const error = await rejectsWith(tool.runJson({}), 'tool-error', 'returned HTTP 404');
    assert.ok(error.message.includes('no such item'), error.message);
    assert.ok(error.message.length < 1_000, 'the excerpt is bounded');
  });

  test('a body larger than maxResponseBytes fails with too-large, and reading stops at the cap', async () => {
    const tool = make({ method: 'GET', path: '/big', returnType: 'text', maxResponseBytes: 100_000 });
    const closed = server.waitForEarlyClose('/big');
    await rejectsWith(tool.runJson({}), 'too-large', 'maxResponseBytes (100000 bytes)');
    await closed; // the server was cut off instead of streaming its 64 MiB
  });

  test('a declared content-length above the cap is refused without reading the body', async () => {
    const tool = make({ method: 'GET', path: '/big-declared', returnType: 'text', maxResponseBytes: 4_096 });
    await rejectsWith(tool.runJson({}), 'too-large', 'larger than maxResponseBytes');
  });
});

describe('HttpTool cancellation and timeout', () => {
  test('aborting the signal cancels the request, and the server sees the connection close', async () => {
    const tool = make({ method: 'GET', path: '/slow', timeoutMs: 60_000 });
    const controller = new AbortController();
    const arrived = server.waitForArrival();
    const closed = server.waitForEarlyClose('/slow');
    const call = tool.runJson({}, controller.signal);
    await arrived;
    controller.abort();
    const error = await rejectsWith(call, 'cancelled', 'was cancelled');
    assert.ok(error instanceof ToolError);
    await closed;
    assert.ok(server.closedEarly.includes('/slow'));
  });

  test('aborting while the body streams cancels too', async () => {
    const tool = make({ method: 'GET', path: '/slow-body', returnType: 'text', timeoutMs: 60_000 });
    const controller = new AbortController();
    const arrived = server.waitForArrival();
    const call = tool.runJson({}, controller.signal);
    await arrived;
    const closed = server.waitForEarlyClose('/slow-body');
    controller.abort();
    await rejectsWith(call, 'cancelled', 'cancelled');
    await closed;
  });

  test('a timeout is a timeout error (not a cancel) naming timeoutMs, and closes the connection', async () => {
    const tool = make({ method: 'GET', path: '/slow', timeoutMs: 150 });
    const closed = server.waitForEarlyClose('/slow');
    await rejectsWith(tool.runJson({}), 'timeout', '150 ms');
    await closed;
  });

  test('a timeout longer than a timer can hold (24.8 days) does not fire at once', async () => {
    // Node runs a setTimeout over 2^31-1 ms after 1 ms: a "practically never" timeout failed every call.
    const tool = make({ method: 'GET', path: '/delayed', returnType: 'text', timeoutMs: 3_000_000_000 });
    assert.equal(await tool.runJson({}), 'done');
  });

  test('an already-aborted signal sends nothing', async () => {
    const before = server.seen.length;
    await rejectsWith(
      make({ method: 'GET', path: '/x' }).runJson({}, AbortSignal.abort()),
      'cancelled',
      'cancelled',
    );
    assert.equal(server.seen.length, before);
  });

  test('a refused connection is unavailable', async () => {
    const idle = createServer();
    idle.listen(0, '127.0.0.1');
    await once(idle, 'listening');
    const port = (idle.address() as AddressInfo).port;
    await new Promise<void>((resolve) => idle.close(() => resolve()));
    const tool = new HttpTool({ name: 'gone', host: '127.0.0.1', port, method: 'GET' });
    await rejectsWith(tool.runJson({}), 'unavailable', 'ECONNREFUSED');
  });
});

describe('HttpTool allowedHosts', () => {
  test('a configured host outside allowedHosts is refused when the tool is built, before any request', () => {
    const before = server.seen.length;
    assert.throws(
      () => make({ host: 'localhost', allowedHosts: ['api.example.com', '*.internal'] }),
      (error: unknown) =>
        error instanceof ToolbusError &&
        error.code === 'invalid-config' &&
        error.message.includes("host 'localhost' is not in allowedHosts ('api.example.com', '*.internal')"),
    );
    assert.equal(server.seen.length, before);
  });

  test('an allowed host works', async () => {
    const tool = make({ method: 'GET', path: '/ok', allowedHosts: ['127.0.0.1'] });
    assert.equal(((await tool.runJson({})) as JsonObject)['rawPath'], '/ok');
  });

  test('a redirect to a host outside allowedHosts is refused before it is followed', async () => {
    const target = `http://localhost:${server.port}/stolen`;
    const tool = make({ method: 'GET', path: '/redirect', allowedHosts: ['127.0.0.1'] });
    await rejectsWith(tool.runJson({ to: target }), 'tool-error', "redirected to host 'localhost'");
    assert.ok(!server.seen.some((s) => s.rawUrl.startsWith('/stolen')));
  });
});

describe('HttpTool headers', () => {
  test('static headers and environment headers are sent; env values are read at call time', async () => {
    const env: Record<string, string | undefined> = { API_TOKEN: 'first-secret' };
    const tool = make({
      method: 'GET',
      path: '/h',
      env,
      headers: { 'X-Static': 'fixed', Authorization: { env: 'API_TOKEN', prefix: 'Bearer ' } },
    });
    let out = (await tool.runJson({})) as JsonObject;
    assert.equal(out['authorization'], 'Bearer first-secret');
    assert.equal(out['x-static'], 'fixed');
    env['API_TOKEN'] = 'rotated';
    out = (await tool.runJson({})) as JsonObject;
    assert.equal(out['authorization'], 'Bearer rotated');
  });

  test('a missing environment variable is a clear error at call time, and nothing is sent', async () => {
    const tool = make({
      method: 'GET',
      path: '/h',
      env: {},
      headers: { Authorization: { env: 'API_TOKEN', prefix: 'Bearer ' } },
    });
    const before = server.seen.length;
    await rejectsWith(
      tool.runJson({}),
      'invalid-config',
      "header 'Authorization' takes its value from environment variable 'API_TOKEN', which is not set",
    );
    assert.equal(server.seen.length, before);
  });

  test('an error never reveals a header secret', async () => {
    const tool = make({
      method: 'GET',
      path: '/status/500',
      env: { TOKEN: 'top-secret-value' },
      headers: { 'X-Key': { env: 'TOKEN' } },
    });
    const error = await rejectsWith(tool.runJson({}), 'tool-error', 'HTTP 500');
    assert.ok(!error.message.includes('top-secret-value'));
  });

  test('a server that echoes the refused secret in its error body does not get it quoted', async () => {
    const tool = make({
      method: 'GET',
      path: '/echo-401',
      env: { TOKEN: 'top-secret-value' },
      headers: { 'X-Key': { env: 'TOKEN', prefix: 'Key ' } },
    });
    const error = await rejectsWith(
      tool.runJson({}),
      'tool-error',
      /HTTP 401.*invalid credentials: Key \[redacted\]/,
    );
    assert.ok(!error.message.includes('top-secret-value'));
    assert.ok(error instanceof HttpStatusError && !error.bodyExcerpt.includes('top-secret-value'));
  });

  test('credentials are dropped when a redirect leaves the origin', async () => {
    const tool = make({
      method: 'GET',
      path: '/redirect',
      env: { TOKEN: 'secret' },
      headers: { Authorization: { env: 'TOKEN', prefix: 'Bearer ' }, 'X-Static': 'kept' },
    });
    const out = (await tool.runJson({ to: `http://localhost:${server.port}/landed` })) as JsonObject;
    assert.equal(out['rawPath'], '/landed');
    assert.equal(out['authorization'], null);
    assert.equal(out['x-static'], 'kept');
  });
});

describe('the http config tool type', () => {
  const factory = httpToolType({ env: { WEATHER_TOKEN: 'w' } });

  test('builds a working tool from AutoGen-style snake_case fields, timeout in seconds', async () => {
    const tool = factory(
      {
        type: 'http',
        name: 'config-probe',
        scheme: 'http',
        host: '127.0.0.1',
        port: server.port,
        path: '/cfg/{city}',
        method: 'GET',
        return_type: 'json',
        timeout: 2.5,
        headers: { Authorization: { env: 'WEATHER_TOKEN', prefix: 'Token ' } },
        json_schema: {
          type: 'object',
          properties: { city: { type: 'string' }, units: { type: 'string' } },
          required: ['city'],
        },
      },
      { key: 'config-probe' },
    );
    assert.ok(tool instanceof HttpTool);
    assert.equal(tool.name, 'config-probe');
    assert.deepEqual(tool.annotations, { readOnly: true, idempotent: true });
    const out = (await tool.runJson({ city: 'São Paulo', units: 'metric' })) as JsonObject;
    assert.equal(out['rawPath'], '/cfg/S%C3%A3o%20Paulo');
    assert.deepEqual(out['query'], [['units', 'metric']]);
    assert.equal(out['authorization'], 'Token w');
  });

  test('the name defaults to the config key', () => {
    const tool = factory({ type: 'http', url: `${server.base}/k` }, { key: 'from-key' });
    assert.equal(tool.name, 'from-key');
  });

  const invalid: Array<[string, JsonObject, string]> = [
    ['no host or url', { type: 'http' }, 'needs url, or host'],
    [
      'a port out of range',
      { host: 'h', port: 70_000 },
      "field 'port' must be an integer from 1 to 65535, got 70000",
    ],
    ['a port as a string', { host: 'h', port: '80' }, "field 'port' must be an integer"],
    ['an unknown method', { host: 'h', method: 'FETCH' }, "field 'method' must be one of 'GET'"],
    ['a bad return_type', { host: 'h', return_type: 'xml' }, "field 'return_type' must be 'text' or 'json'"],
    [
      'a negative timeout',
      { host: 'h', timeout: -1 },
      "field 'timeout' must be a positive number of seconds",
    ],
    ['an unknown field', { host: 'h', verb: 'GET' }, "unknown field 'verb'"],
    ['a bad scheme', { host: 'h', scheme: 'ftp' }, "field 'scheme' must be 'http' or 'https'"],
    [
      'a json_schema that is not an object',
      { host: 'h', json_schema: [] },
      "field 'json_schema' must be a JSON Schema object",
    ],
    [
      'a bad header value',
      { host: 'h', headers: { Authorization: 5 } },
      "header 'Authorization' must be a string or",
    ],
    [
      'a path placeholder not in json_schema',
      { host: 'h', path: '/a/{id}', json_schema: { type: 'object', properties: {} } },
      "path placeholder '{id}' is not a property",
    ],
    ['a placeholder in the host', { url: 'http://{tenant}.example.com/x' }, 'placeholder in its host'],
    ['url and host together', { url: 'http://a/x', host: 'b' }, 'either url or host'],
    [
      'a host outside allowed_hosts',
      { host: 'evil.example', allowed_hosts: ['good.example'] },
      "host 'evil.example' is not in allowedHosts",
    ],
  ];
  for (const [what, descriptor, fragment] of invalid) {
    test(`rejects ${what} with invalid-config naming the item`, () => {
      assert.throws(
        () => factory(descriptor, { key: 'bad-item' }),
        (error: unknown) => {
          assert.ok(error instanceof ToolbusError, String(error));
          assert.equal(error.code, 'invalid-config');
          assert.ok(error.message.startsWith("config 'tool/bad-item': "), error.message);
          assert.ok(error.message.includes(fragment), error.message);
          return true;
        },
      );
    });
  }

  test('a deployment allowlist cannot be widened by an item', () => {
    const strict = httpToolType({ allowedHosts: ['api.example.com'] });
    assert.throws(
      () => strict({ host: 'other.example', allowed_hosts: ['other.example'] }, { key: 'wide' }),
      (error: unknown) =>
        error instanceof ToolbusError &&
        error.code === 'invalid-config' &&
        error.message.includes("'other.example' is not in allowedHosts"),
    );
    assert.throws(
      () => strict({ host: 'api.example.com', allowed_hosts: ['narrow.example'] }, { key: 'narrow' }),
      (error: unknown) => error instanceof ToolbusError && error.message.includes('is not in allowed_hosts'),
    );
    assert.equal(strict({ host: 'api.example.com' }, { key: 'ok' }).name, 'ok');
  });

  test("an item's narrower allowed_hosts also holds for redirects", async () => {
    const deployment = httpToolType({ allowedHosts: ['127.0.0.1', 'localhost'] });
    const tool = deployment(
      {
        host: '127.0.0.1',
        port: server.port,
        path: '/redirect',
        method: 'GET',
        allowed_hosts: ['127.0.0.1'],
        json_schema: { type: 'object', properties: { to: { type: 'string' } } },
      },
      { key: 'narrowed' },
    );
    const target = `http://localhost:${server.port}/stolen-by-redirect`;
    await rejectsWith(tool.runJson({ to: target }), 'tool-error', "redirected to host 'localhost'");
    assert.ok(!server.seen.some((s) => s.rawUrl.startsWith('/stolen-by-redirect')));
  });
});
