import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveMcpServerParams } from './server-params.js';

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
