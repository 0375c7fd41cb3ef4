/**
 * `toolbus up` loads the MCP SDK only when MCP is used: not at start (the example tools are live all the
 * same), then on the first `mcp-tool` item and on the first `/mcp` request, both of which work as before.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { ROOT, interrupt } from '../support/cli.js';
import { startHttpFixture, waitFor } from '../fixtures/mcp-spawn.js';

const MODULE_LOG = fileURLToPath(new URL('../fixtures/module-log.mjs', import.meta.url));
const TOKEN = 'lazy-mcp-test-token';

/** The MCP SDK packages among the modules logged so far. */
function sdkModules(log: string): string[] {
  const lines = existsSync(log) ? readFileSync(log, 'utf8').split('\n') : [];
  const names = lines.map((l) => /node_modules\/(@modelcontextprotocol\/[^/]+)\//.exec(l)?.[1]);
  return [...new Set(names.filter((n) => n !== undefined))].sort();
}

test('toolbus up loads no MCP SDK module at start; an mcp-tool item and /mcp load it and work', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-lazy-mcp-'));
  const log = join(home, 'modules.log');
  const fixture = await startHttpFixture('sessions');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--import', MODULE_LOG, join(ROOT, 'src/cli/main.ts'), 'up', '--port', '0'],
    {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        TOOLBUS_HOME: home,
        TOOLBUS_TOKEN: TOKEN,
        TOOLBUS_TEST_MODULE_LOG: log,
      },
    },
  );
  t.after(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await fixture.stop();
    await rm(home, { recursive: true, force: true });
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  assert.ok(await waitFor(() => /Press Ctrl-C to stop\./.test(out), 60_000, 50), out);
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1];
  assert.ok(url, out);
  assert.match(out, /tools\s+.*tell-joke/);
  assert.match(out, /MCP at http:\/\/127\.0\.0\.1:\d+\/mcp/);
  assert.deepEqual(sdkModules(log), [], 'no MCP SDK module is loaded at start');

  // An mcp-tool item: the tool type loads the MCP leaf and the tool goes live.
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  const put = async (path: string, body: unknown): Promise<void> => {
    const r = await fetch(`${url}/api/v1/config/${path}`, {
      method: 'PUT',
      headers,
      body: JSON.stringify(body),
    });
    assert.equal(r.status < 300, true, `${path}: ${r.status} ${await r.text()}`);
  };
  await put('mcp/adder', { url: fixture.url, 'remote-name': 'add' });
  await put('tool/sum', { type: 'mcp-tool', 'mcp-tool': 'adder', description: 'Adds two numbers' });
  const invoke = async (): Promise<{ status: number; body: { content?: string } }> => {
    const r = await fetch(`${url}/api/v1/tools/sum/invoke`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ a: 20, b: 22 }),
    });
    return { status: r.status, body: (await r.json()) as { content?: string } };
  };
  assert.ok(await waitFor(async () => (await invoke()).status === 200, 20_000, 100), out);
  assert.equal((await invoke()).body.content, '{"sum":42}');
  assert.ok(sdkModules(log).includes('@modelcontextprotocol/client'), sdkModules(log).join(', '));

  // The /mcp endpoint: the official client connects with the token and sees every tool.
  const client = new Client({ name: 'lazy-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
    }),
  );
  const names = (await client.listTools()).tools.map((tool) => tool.name);
  assert.ok(names.includes('tell-joke') && names.includes('sum'), names.join(', '));
  await client.close();
  assert.ok(sdkModules(log).includes('@modelcontextprotocol/server'), sdkModules(log).join(', '));

  assert.equal(await interrupt(child), 0, out);
  assert.match(out, /toolbus: stopped/);
});
