/**
 * @module The `http` tool type in a real ToolRegistry: config items become live HTTP tools, a bad item
 * is reported under its key and skipped, and a change applies without a restart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { httpToolType } from '../../src/adapters/http/index.js';
import { MemoryConfigStore } from '../../src/config/index.js';
import { ToolRegistry } from '../../src/registry/index.js';

test('http config items become live tools; a bad item is reported and skipped; edits apply live', async (t) => {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname.startsWith('/fail')) {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('database unreachable');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ path: req.url, auth: req.headers.authorization ?? null }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const store = new MemoryConfigStore();
  await store.put('tool', 'weather', {
    type: 'http',
    description: 'Weather for a city',
    host: '127.0.0.1',
    port,
    path: '/weather/{city}',
    method: 'GET',
    return_type: 'json',
    headers: { Authorization: { env: 'WEATHER_TOKEN', prefix: 'Bearer ' } },
    json_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  });
  await store.put('tool', 'broken', { type: 'http', host: '127.0.0.1', port: 'eighty' });
  await store.put('tool', 'failing', { type: 'http', url: `http://127.0.0.1:${port}/fail`, method: 'GET' });

  const registry = new ToolRegistry({
    store,
    // The weather tool's Authorization header reads WEATHER_TOKEN, which config may do only when listed.
    allowlist: { env: ['WEATHER_TOKEN'] },
    toolTypes: { http: httpToolType({ env: { WEATHER_TOKEN: 'tok' }, allowedHosts: ['127.0.0.1'] }) },
  });
  t.after(() => registry.close());
  await registry.start();

  assert.deepEqual(
    registry.tools
      .list()
      .map((tool) => tool.name)
      .sort(),
    ['failing', 'weather'],
  );
  const problems = registry.problems();
  assert.equal(problems.length, 1, JSON.stringify(problems));
  assert.equal(problems[0]?.key, 'tool/broken');
  assert.equal(problems[0]?.code, 'invalid-config');
  assert.match(problems[0]?.message ?? '', /field 'port' must be an integer from 1 to 65535, got "eighty"/);

  const ok = await registry.tools.call('weather', '{"city":"Ciudad de México"}');
  assert.equal(ok.isError, false, ok.content);
  assert.deepEqual(JSON.parse(ok.content), {
    path: '/weather/Ciudad%20de%20M%C3%A9xico',
    auth: 'Bearer tok',
  });

  const failed = await registry.tools.call('failing', '{}');
  assert.equal(failed.isError, true);
  assert.equal(failed.error?.code, 'tool-error');
  assert.match(failed.content, /returned HTTP 500.*database unreachable/);

  await store.put('tool', 'broken', { type: 'http', host: '127.0.0.1', port, path: '/fixed', method: 'GET' });
  await registry.refresh();
  assert.deepEqual(
    registry.tools
      .list()
      .map((tool) => tool.name)
      .sort(),
    ['broken', 'failing', 'weather'],
  );
  assert.deepEqual(registry.problems(), []);
  const fixed = await registry.tools.call('broken', '{}');
  assert.equal(fixed.isError, false, fixed.content);
});
