import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveMcpServerParams, toolTimeoutMs } from './server-params.js';

test('a stdio server without an id is named by its program and script, never by the rest of its command line', () => {
  const id = (command: string, args?: string[]) => resolveMcpServerParams({ command, args }).id;
  assert.equal(id('/usr/bin/node', ['/srv/mcp/server.mjs', '--token', 's3cret']), 'node server.mjs');
  assert.equal(id('npx', ['-y', '@modelcontextprotocol/server-everything']), 'npx');
  assert.equal(id('uvx', ['mcp-server-fetch']), 'uvx mcp-server-fetch');
  assert.equal(id('server', ['API_KEY=s3cret']), 'server');
  assert.equal(id('python'), 'python');
  assert.equal(resolveMcpServerParams({ command: 'node', args: ['x.js'], id: 'files' }).id, 'files');
  assert.equal(
    resolveMcpServerParams({ url: 'https://mcp.example.com:8443/mcp?key=s3cret' }).id,
    'mcp.example.com:8443',
  );
});

test("a tool named like an Object.prototype member ('constructor', 'toString', '__proto__') gets the server's timeout or its own, never NaN", () => {
  const p = resolveMcpServerParams({ command: 'x', timeoutMs: 5_000, toolTimeoutsMs: { slow: 9_000 } });
  for (const name of ['constructor', 'toString', 'hasOwnProperty', 'valueOf', '__proto__']) {
    assert.equal(toolTimeoutMs(p, name), 5_000, name);
  }
  assert.equal(toolTimeoutMs(p, 'slow'), 9_000);
  // Configured for such a tool (as parsed from JSON, where '__proto__' is an own key), it applies.
  const own = resolveMcpServerParams({
    command: 'x',
    toolTimeoutsMs: JSON.parse('{"__proto__": 7000, "constructor": 8000}') as Record<string, number>,
  });
  assert.equal(toolTimeoutMs(own, '__proto__'), 7_000);
  assert.equal(toolTimeoutMs(own, 'constructor'), 8_000);
});
