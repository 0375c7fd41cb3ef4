/**
 * `GET /metrics`: on the gateway behind its token, and on the token-less loopback listener that serves
 * nothing else. Real HTTP servers on 127.0.0.1, a real ToolSet and ToolbusMetrics.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { createGateway, createMetricsListener } from '../../src/gateway/index.js';
import { ToolbusMetrics } from '../../src/observability/index.js';
import { FunctionTool, ToolSet } from '../../src/tools/index.js';
import { rawRequest } from '../support/raw-http.js';

const TOKEN = 'metrics-test-token';

function echoSet(metrics: ToolbusMetrics): ToolSet {
  const echo = new FunctionTool(({ text }: { text: string }) => text, {
    name: 'echo',
    description: 'Echo',
    parameters: z.object({ text: z.string() }),
  });
  const tools = new ToolSet([echo], { hooks: metrics.toolSetHooks() });
  metrics.observeToolSet(tools);
  return tools;
}

describe('GET /metrics on the gateway', () => {
  test('needs the token (401 without) and serves the text exposition with the toolbus_ series', async (t) => {
    const metrics = new ToolbusMetrics();
    const tools = echoSet(metrics);
    const gateway = createGateway({ tools, token: TOKEN, metrics: () => metrics.scrape() });
    const url = await gateway.listen({ port: 0 });
    t.after(() => gateway.close());

    const invoked = await fetch(`${url}/api/v1/tools/echo/invoke`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: '{"text":"hi"}',
    });
    assert.equal(invoked.status, 200);

    const anonymous = await fetch(`${url}/metrics`);
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.headers.get('www-authenticate'), 'Bearer');
    assert.doesNotMatch(await anonymous.text(), /toolbus_/);
    const wrong = await fetch(`${url}/metrics`, { headers: { authorization: 'Bearer nope' } });
    assert.equal(wrong.status, 401);
    await wrong.body?.cancel();

    const scraped = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(scraped.status, 200);
    assert.match(scraped.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const body = await scraped.text();
    assert.match(body, /^toolbus_tool_calls_total\{tool="echo",outcome="ok"\} 1$/m);
    assert.match(body, /^toolbus_tool_calls_in_flight 0$/m);
    assert.match(body, /^# TYPE toolbus_tool_call_duration_seconds histogram$/m);
    assert.match(body, /^process_resident_memory_bytes /m);
  });

  test('a gateway given no metrics answers 404 (with the token)', async (t) => {
    const gateway = createGateway({ tools: new ToolSet([]), token: TOKEN });
    const url = await gateway.listen({ port: 0 });
    t.after(() => gateway.close());
    const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(response.status, 404);
    assert.equal(((await response.json()) as { error: { code: string } }).error.code, 'not-found');
  });
});

describe('the metrics listener', () => {
  test('serves GET /metrics without a token, 404 for anything else, and checks Host', async (t) => {
    const metrics = new ToolbusMetrics({ defaultMetrics: false });
    await echoSet(metrics).call('echo', '{"text":"hi"}');
    const listener = createMetricsListener({ metrics: () => metrics.scrape() });
    const url = await listener.listen({ port: 0 });
    t.after(() => listener.close());
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);

    const scraped = await fetch(`${url}/metrics`);
    assert.equal(scraped.status, 200);
    assert.match(await scraped.text(), /^toolbus_tool_calls_total\{tool="echo",outcome="ok"\} 1$/m);

    for (const [method, path] of [
      ['GET', '/'],
      ['GET', '/api/v1/tools'],
      ['POST', '/metrics'],
      ['DELETE', '/metrics'],
    ] as const) {
      const response = await fetch(`${url}${path}`, { method });
      assert.equal(response.status, 404, `${method} ${path}`);
      await response.body?.cancel();
    }

    // DNS rebinding: a page whose name resolves to 127.0.0.1 sends its own Host.
    const rebound = await rawRequest(url, '/metrics', { headers: { host: 'attacker.example' } });
    assert.equal(rebound.status, 403);
    assert.doesNotMatch(rebound.body, /toolbus_/);
    const crossSite = await rawRequest(url, '/metrics', {
      headers: { host: new URL(url).host, origin: 'https://attacker.example' },
    });
    assert.equal(crossSite.status, 403);
  });

  test('refuses a host that is not loopback (it has no token)', async () => {
    const listener = createMetricsListener({
      metrics: () => Promise.resolve({ contentType: 'x', body: '' }),
    });
    await assert.rejects(
      listener.listen({ host: '0.0.0.0', port: 0 }),
      (error: Error & { code?: string }) => {
        assert.equal(error.code, 'usage');
        assert.match(error.message, /without a token on 0\.0\.0\.0/);
        return true;
      },
    );
    await listener.close();
  });

  test('a failing collector is a 500 without details, reported to onError', async (t) => {
    const errors: Error[] = [];
    const listener = createMetricsListener({
      metrics: () => Promise.reject(new Error('secret detail /home/me')),
      onError: (error) => errors.push(error),
    });
    const url = await listener.listen({ port: 0 });
    t.after(() => listener.close());
    const response = await fetch(`${url}/metrics`);
    assert.equal(response.status, 500);
    assert.doesNotMatch(await response.text(), /secret/);
    assert.equal(errors[0]?.message, 'secret detail /home/me');
  });
});
