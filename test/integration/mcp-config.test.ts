/**
 * MCP from config: the `mcp` config type and the `mcp-tool` tool type (TrustGraph's fields) in a real
 * `ToolRegistry`, one session per server shared across tools, `importMcpTools`, and the CLI
 * (`toolbus mcp import`, `toolbus mcp serve` checked with the official client over stdio).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { importMcpTools, mcpToolType } from '../../src/adapters/mcp/index.js';
import { main } from '../../src/cli/main.js';
import { MemoryConfigStore } from '../../src/config/index.js';
import { SqliteConfigStore } from '../../src/config/sqlite/index.js';
import { ToolRegistry } from '../../src/registry/index.js';
import { ROOT, STDIO_SERVER } from '../fixtures/mcp-spawn.js';

const fixtureServer = { command: process.execPath, args: ['--import', 'tsx', STDIO_SERVER] };
/** TOOLBUS_ALLOW_COMMANDS for the fixture: that program with those arguments only (quoted: paths may hold spaces). */
const ALLOW_FIXTURE = `"${process.execPath}" --import tsx "${STDIO_SERVER}"`;
/** Config may start the fixture server and nothing else. */
const allowlist = { commands: [ALLOW_FIXTURE] };

test(
  'mcp-tool items share one session per server; arguments from config or from the server',
  { timeout: 60_000 },
  async (t) => {
    const store = new MemoryConfigStore();
    const mcpTools = mcpToolType();
    const registry = new ToolRegistry({ store, allowlist, toolTypes: { 'mcp-tool': mcpTools } });
    t.after(async () => {
      await registry.close();
      await mcpTools.close();
      await store.close();
    });
    // TrustGraph's shape: one `mcp/<id>` item per remote tool, `remote-name` defaulting to the id.
    await store.put('mcp', 'adder', { ...fixtureServer, 'remote-name': 'add' });
    await store.put('mcp', 'echo', fixtureServer);
    await store.put('tool', 'sum', {
      type: 'mcp-tool',
      name: 'sum',
      description: 'Adds two numbers',
      'mcp-tool': 'adder',
      arguments: [
        { name: 'a', type: 'number', description: 'first' },
        { name: 'b', type: 'number', description: 'second' },
      ],
    });
    await store.put('tool', 'echo-it', { type: 'mcp-tool', 'mcp-tool': 'echo' });
    await store.put('tool', 'broken', { type: 'mcp-tool', 'mcp-tool': 'missing', arguments: [] });
    await registry.start();

    const names = registry.tools.list().map((tool) => tool.name);
    assert.deepEqual(names.sort(), ['echo-it', 'sum']);
    assert.equal(mcpTools.sessionCount, 1);
    const sum = registry.tools.get('sum');
    assert.deepEqual(sum?.schema.parameters.required, ['a', 'b']);
    assert.equal((await registry.tools.call('sum', { a: 20, b: 22 })).content, '{"sum":42}');
    // No `arguments`: the server's schema ($defs and $ref included) and description are used.
    const echo = registry.tools.get('echo-it');
    assert.equal(echo?.description, 'Echoes a message');
    assert.ok('$defs' in (echo?.schema.parameters ?? {}));
    assert.equal((await registry.tools.call('echo-it', { message: { text: 'hey' } })).content, 'hey');

    const problem = registry.problems().find((p) => p.key === 'tool/broken');
    assert.ok(problem, JSON.stringify(registry.problems()));
    assert.match(problem.message, /config 'mcp\/missing' does not exist/);

    // A wrong remote name is reported with what the server offers.
    await store.put('mcp', 'adder', { ...fixtureServer, 'remote-name': 'subtract' });
    await store.put('tool', 'sum', { type: 'mcp-tool', 'mcp-tool': 'adder' });
    await registry.refresh();
    const wrong = registry.problems().find((p) => p.key === 'tool/sum');
    assert.match(wrong?.message ?? '', /has no tool 'subtract'; it offers .*'add'/);
  },
);

test(
  'importMcpTools writes one mcp-tool item per server tool, usable at once',
  { timeout: 60_000 },
  async (t) => {
    const store = new MemoryConfigStore();
    const mcpTools = mcpToolType();
    t.after(async () => {
      await mcpTools.close();
      await store.close();
    });
    await store.put('mcp', 'fixture', fixtureServer);
    await store.put('tool', 'fx_add', {
      type: 'mcp-tool',
      'mcp-tool': 'fixture',
      'remote-name': 'add',
      description: 'kept',
    });
    const imported = await importMcpTools(store, 'fixture', { prefix: 'fx_', allowlist });
    const byRemote = new Map(imported.map((i) => [i.remoteName, i]));
    assert.equal(byRemote.get('echo')?.status, 'written');
    assert.equal(byRemote.get('echo')?.hasArguments, false);
    assert.equal(byRemote.get('add')?.status, 'exists');
    assert.equal(byRemote.get('counter')?.hasArguments, true);
    const echoItem = await store.get('tool', 'fx_echo');
    assert.deepEqual(
      {
        type: (echoItem?.value as Record<string, unknown>).type,
        id: (echoItem?.value as Record<string, unknown>)['mcp-tool'],
      },
      { type: 'mcp-tool', id: 'fixture' },
    );
    // A flat schema becomes TrustGraph `arguments`; a richer one (bounds, $defs) stays with the server.
    const addTool = (await store.get('tool', 'fx_add_tool'))?.value as {
      arguments?: { name: string; type: string; required: boolean }[];
    };
    assert.deepEqual(
      addTool.arguments?.map((a) => [a.name, a.type, a.required]),
      [['name', 'string', true]],
    );
    assert.equal(byRemote.get('slow')?.hasArguments, false);

    const registry = new ToolRegistry({ store, allowlist, toolTypes: { 'mcp-tool': mcpTools } });
    t.after(() => registry.close());
    await registry.start();
    assert.deepEqual(registry.problems(), []);
    assert.equal(
      (await registry.tools.call('fx_echo', { message: { text: 'imported', times: 2 } })).content,
      'imported imported',
    );
    assert.equal(
      (await registry.tools.call('fx_slow', { steps: 1, stepMs: 1 })).content,
      'done after 1 steps',
    );
    assert.equal(mcpTools.sessionCount, 1);

    await assert.rejects(importMcpTools(store, 'nope', { allowlist }), /config 'mcp\/nope' does not exist/);
  },
);

test(
  'importMcpTools: an include name the server does not offer is returned as missing, not dropped',
  { timeout: 60_000 },
  async (t) => {
    const store = new MemoryConfigStore();
    t.after(() => store.close());
    await store.put('mcp', 'fixture', fixtureServer);
    const imported = await importMcpTools(store, 'fixture', { include: ['echo', 'ecko'], allowlist });
    assert.deepEqual(
      imported.map((i) => [i.remoteName, i.key, i.status]),
      [
        ['echo', 'tool/echo', 'written'],
        ['ecko', 'tool/ecko', 'missing'],
      ],
    );
    assert.equal(await store.get('tool', 'ecko'), undefined);
  },
);

test(
  'CLI: toolbus mcp import, then toolbus mcp serve to an MCP client over stdio',
  { timeout: 90_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'toolbus-mcp-cli-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const dbPath = join(dir, 'config.db');
    const store = new SqliteConfigStore({ path: dbPath });
    await store.put('mcp', 'fixture', fixtureServer);
    await store.close();

    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let out = '';
    let err = '';
    stdout.on('data', (c: Buffer) => (out += c.toString()));
    stderr.on('data', (c: Buffer) => (err += c.toString()));
    const code = await main(['mcp', 'import', 'fixture', '--store', dbPath, '--include', 'echo,add'], {
      stdin: new PassThrough(),
      stdout,
      stderr,
      env: { TOOLBUS_ALLOW_COMMANDS: ALLOW_FIXTURE },
      cwd: dir,
      signal: new AbortController().signal,
    });
    assert.equal(code, 0, err);
    assert.match(out, /tool\/echo {2}<- echo \[schema from server\]/);
    assert.match(out, /2 of 2 tools written/);

    const client = new Client({ name: 'test', version: '1' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'mcp', 'serve', '--store', dbPath],
        // The registry of `mcp serve` starts the fixture server for the imported tools.
        env: { TOOLBUS_ALLOW_COMMANDS: ALLOW_FIXTURE },
        cwd: ROOT,
        stderr: 'ignore',
      }),
    );
    t.after(() => client.close());
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(), ['add', 'echo']);
    const echo = tools.find((tool) => tool.name === 'echo');
    assert.ok(echo?.inputSchema.$defs, 'the $defs of the original server survive the round trip');
    const result = await client.callTool({ name: 'echo', arguments: { message: { text: 'full circle' } } });
    assert.equal(result.isError, undefined);
    assert.deepEqual(result.content, [{ type: 'text', text: 'full circle' }]);
    const bad = await client.callTool({ name: 'add', arguments: { a: 'x' } });
    assert.equal(bad.isError, true);
  },
);
