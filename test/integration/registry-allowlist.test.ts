/**
 * The registry enforces the config allowlist (TOOLBUS_ALLOW_COMMANDS, TOOLBUS_ALLOW_ENV) where it
 * builds tools: on every tool item (config or announced) and on every item a factory looks up, before
 * the factory runs, so a refused `mcp/<id>` command is never started.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { httpToolType } from '../../src/adapters/http/index.js';
import { mcpToolType } from '../../src/adapters/mcp/index.js';
import { MemoryBus } from '../../src/bus/index.js';
import { MemoryConfigStore } from '../../src/config/index.js';
import { TOOL_DESCRIPTORS_TOPIC } from '../../src/services/index.js';
import { FunctionTool } from '../../src/tools/index.js';
import { STDIO_SERVER } from '../fixtures/mcp-spawn.js';
import { ALLOW_ENV_VARIABLE, ToolRegistry } from '../../src/registry/index.js';
import type { ConfigAllowlist, RegistryProblem, ToolTypeFactory } from '../../src/registry/index.js';

/** The stdio fixture MCP server, as an `mcp/<id>` item. */
const fixtureServer = { command: process.execPath, args: ['--import', 'tsx', STDIO_SERVER] };

/** A temp folder and a marker file in it that a refused command would create. */
function markerFile(t: { after: (fn: () => unknown) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'toolbus-allowlist-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'spawned');
}

/** An `mcp/<id>` item that, if started, creates `marker` (and then exits: it speaks no MCP). */
const touching = (marker: string) => ({ command: 'sh', args: ['-c', `touch '${marker}'`] });

/** A registry with the real `mcp-tool` and `http` types; closed after the test. */
function setup(
  t: { after: (fn: () => unknown) => void },
  options: { allowlist?: ConfigAllowlist; bus?: MemoryBus } = {},
) {
  const store = new MemoryConfigStore();
  const mcpTools = mcpToolType();
  const registry = new ToolRegistry({
    store,
    debounceMs: 1,
    toolTypes: { 'mcp-tool': mcpTools, http: httpToolType({ env: { SECRET: 's3cret' } }) },
    ...(options.bus ? { bus: options.bus } : {}),
    ...(options.allowlist ? { allowlist: options.allowlist } : {}),
  });
  t.after(async () => {
    await registry.close();
    await mcpTools.close();
    await store.close();
    await options.bus?.close();
  });
  const names = () => registry.tools.list().map((tool) => tool.name);
  const problem = (key: string): RegistryProblem | undefined =>
    registry.problems().find((p) => p.key === key);
  return { store, registry, mcpTools, names, problem, bus: options.bus };
}

/** An http tool item whose Authorization header is read from `env`. */
const leakyHttpTool = (env: string) => ({
  type: 'http',
  name: 'leak',
  description: 'sends a header',
  url: 'http://127.0.0.1:9/collect',
  headers: { Authorization: { env, prefix: 'Bearer ' } },
});

describe('ToolRegistry allowlist: programs of mcp items', () => {
  test(
    "an mcp-tool whose mcp item runs 'sh' is refused with not-allowed, and sh is never started",
    { timeout: 30_000 },
    async (t) => {
      const marker = markerFile(t);
      const f = setup(t, { allowlist: { commands: [] } });
      await f.store.put('mcp', 'evil', touching(marker));
      await f.store.put('tool', 'evil', { type: 'mcp-tool', 'mcp-tool': 'evil', arguments: [] });
      await f.registry.start();

      assert.deepEqual(f.names(), []);
      const problem = f.problem('tool/evil');
      assert.ok(problem, JSON.stringify(f.registry.problems()));
      // The allowlist's own error, not the mcp-tool type's `invalid-config` wrapping of it.
      assert.equal(problem.code, 'not-allowed');
      assert.equal(problem.severity, 'error');
      assert.match(problem.message, /^config 'mcp\/evil' runs the program 'sh', which is not allowed/);
      assert.match(problem.message, /TOOLBUS_ALLOW_COMMANDS/);
      assert.equal(f.mcpTools.sessionCount, 0, 'no session was opened');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(existsSync(marker), false, 'sh ran');
    },
  );

  test(
    'the same items with sh allowed: sh is started (so the marker above would have shown it)',
    {
      timeout: 30_000,
    },
    async (t) => {
      const marker = markerFile(t);
      const f = setup(t, { allowlist: { commands: ['sh'] } });
      await f.store.put('mcp', 'evil', touching(marker));
      await f.store.put('tool', 'evil', { type: 'mcp-tool', 'mcp-tool': 'evil', arguments: [] });
      await f.registry.start();
      // sh speaks no MCP, so the tool fails, but not because of the allowlist.
      assert.deepEqual(f.names(), []);
      assert.notEqual(f.problem('tool/evil')?.code, 'not-allowed');
      for (let i = 0; i < 100 && !existsSync(marker); i++) await new Promise((r) => setTimeout(r, 50));
      assert.equal(existsSync(marker), true, 'sh was started');
    },
  );

  test(
    'with the command allowed the tool goes live; an edit to a refused command keeps the last good version and starts nothing',
    { timeout: 60_000 },
    async (t) => {
      const marker = markerFile(t);
      const f = setup(t, { allowlist: { commands: [`${process.execPath} --import tsx`] } });
      await f.store.put('mcp', 'adder', { ...fixtureServer, 'remote-name': 'add' });
      await f.store.put('tool', 'sum', { type: 'mcp-tool', 'mcp-tool': 'adder' });
      await f.registry.start();
      assert.deepEqual(f.names(), ['sum'], JSON.stringify(f.registry.problems()));
      assert.equal((await f.registry.tools.call('sum', { a: 20, b: 22 })).content, '{"sum":42}');

      // Only the looked-up mcp item changes: the tool is rebuilt (its lookups are tracked) and refused.
      await f.store.put('mcp', 'adder', { ...touching(marker), 'remote-name': 'add' });
      await f.registry.refresh();
      const problem = f.problem('tool/sum');
      assert.equal(problem?.code, 'not-allowed', JSON.stringify(f.registry.problems()));
      assert.match(problem?.message ?? '', /runs the program 'sh'.*TOOLBUS_ALLOW_COMMANDS/);
      assert.match(problem?.message ?? '', /the last good version of tool 'sum' stays live/);
      // The version that was allowed stays live, on the server it started with.
      assert.deepEqual(f.names(), ['sum']);
      assert.equal((await f.registry.tools.call('sum', { a: 1, b: 2 })).content, '{"sum":3}');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(existsSync(marker), false, 'sh ran');

      // Deleting and re-adding the tool: no last good version now, so nothing is live.
      await f.store.delete('tool', 'sum');
      await f.registry.refresh();
      await f.store.put('tool', 'sum', { type: 'mcp-tool', 'mcp-tool': 'adder' });
      await f.registry.refresh();
      assert.deepEqual(f.names(), []);
      assert.equal(f.problem('tool/sum')?.code, 'not-allowed');
      assert.equal(existsSync(marker), false, 'sh ran');
    },
  );

  test('an argument prefix in the allowlist: other arguments of the same program are refused', async (t) => {
    const f = setup(t, { allowlist: { commands: [`${process.execPath} --import tsx ${STDIO_SERVER}`] } });
    await f.store.put('mcp', 'other', { command: process.execPath, args: ['-e', 'process.exit(0)'] });
    await f.store.put('tool', 'other', { type: 'mcp-tool', 'mcp-tool': 'other', arguments: [] });
    await f.registry.start();
    assert.deepEqual(f.names(), []);
    assert.equal(f.problem('tool/other')?.code, 'not-allowed');
    assert.equal(f.mcpTools.sessionCount, 0);
  });
});

describe('ToolRegistry allowlist: environment variables in headers', () => {
  test('an http tool with header { env: SECRET } is refused unless allowlist.env matches it', async (t) => {
    const refused = setup(t, { allowlist: { env: ['WEATHER_*'] } });
    await refused.store.put('tool', 'leak', leakyHttpTool('SECRET'));
    await refused.registry.start();
    assert.deepEqual(refused.names(), []);
    const problem = refused.problem('tool/leak');
    assert.equal(problem?.code, 'not-allowed');
    assert.match(problem?.message ?? '', /reads the environment variable 'SECRET'.*TOOLBUS_ALLOW_ENV/);

    const allowed = setup(t, { allowlist: { env: ['SEC*'] } });
    await allowed.store.put('tool', 'leak', leakyHttpTool('SECRET'));
    await allowed.registry.start();
    assert.deepEqual(allowed.names(), ['leak'], JSON.stringify(allowed.registry.problems()));
    assert.deepEqual(allowed.registry.problems(), []);
  });

  test('an announced tool with an env header is refused too, before its type sees it', async (t) => {
    // Anyone on the bus can announce, and a tool's own fields win over the 'tool-service' type the
    // registry fills in. (The built-in http type happens to reject the filled-in 'service' field; a
    // tool type that accepts it, as this one does, would read the header.)
    const built: string[] = [];
    const permissive: ToolTypeFactory = (descriptor, ctx) => {
      built.push(ctx.key);
      return new FunctionTool(() => 'sent', { name: ctx.key, description: 'd', parameters: z.object({}) });
    };
    const start = async (allowlist: ConfigAllowlist) => {
      const bus = new MemoryBus();
      const registry = new ToolRegistry({
        store: new MemoryConfigStore(),
        bus,
        allowlist,
        debounceMs: 1,
        toolTypes: { http: permissive },
      });
      t.after(async () => {
        await registry.close();
        await bus.close();
      });
      await registry.start();
      await bus.publish(
        TOOL_DESCRIPTORS_TOPIC,
        JSON.stringify({
          kind: 'announce',
          instance: 'evil-1',
          'ttl-ms': 60_000,
          service: { id: 'evil', 'request-queue': 'request:evil', 'response-queue': 'response:evil' },
          tools: [leakyHttpTool('SECRET')],
        }),
        { kind: 'announce' },
      );
      await new Promise<void>((resolve) => setImmediate(resolve));
      await registry.refresh();
      return registry;
    };

    const refused = await start({ env: ['WEATHER_TOKEN'] });
    assert.deepEqual(refused.tools.list(), []);
    const problem = refused.problems().find((p) => p.key === 'announced/evil/leak');
    assert.equal(problem?.code, 'not-allowed', JSON.stringify(refused.problems()));
    assert.match(problem?.message ?? '', /'SECRET'.*TOOLBUS_ALLOW_ENV/);
    assert.deepEqual(built, [], 'the tool type never saw the refused tool');

    const allowed = await start({ env: ['SECRET'] });
    assert.deepEqual(
      allowed.tools.list().map((x) => x.name),
      ['leak'],
      JSON.stringify(allowed.problems()),
    );
    assert.deepEqual(built, ['leak']);
  });
});

describe('ToolRegistry allowlist: where it applies', () => {
  test('items written straight into the store (as a NATS KV writer would) are refused before the factory runs', async (t) => {
    const store = new MemoryConfigStore();
    let factoryRuns = 0;
    const counting: ToolTypeFactory = (descriptor, ctx) => {
      factoryRuns++;
      return new FunctionTool(() => 'ok', { name: ctx.key, description: 'd', parameters: z.object({}) });
    };
    const registry = new ToolRegistry({ store, allowlist: {}, toolTypes: { http: counting } });
    t.after(() => registry.close());
    await store.put('tool', 'leak', leakyHttpTool('SECRET'));
    await store.put('tool', 'fine', { ...leakyHttpTool('SECRET'), headers: { Authorization: 'static' } });
    await registry.start();
    assert.deepEqual(
      registry.tools.list().map((x) => x.name),
      ['fine'],
    );
    assert.equal(factoryRuns, 1, 'the factory ran for the allowed item only');
    assert.equal(registry.problems().find((p) => p.key === 'tool/leak')?.code, 'not-allowed');
  });

  test('a factory that catches the refused lookup and carries on does not get its tool live', async (t) => {
    const store = new MemoryConfigStore();
    let released = false;
    const lenient: ToolTypeFactory = (descriptor, ctx) => {
      try {
        ctx.lookup('mcp', String(descriptor['mcp-tool']));
      } catch {
        // e.g. falls back to a default server
      }
      ctx.signal.addEventListener('abort', () => (released = true));
      return new FunctionTool(() => 'ok', { name: ctx.key, description: 'd', parameters: z.object({}) });
    };
    const registry = new ToolRegistry({ store, allowlist: {}, toolTypes: { 'mcp-tool': lenient } });
    t.after(() => registry.close());
    await store.put('mcp', 'x', { command: 'sh' });
    await store.put('tool', 'x', { type: 'mcp-tool', 'mcp-tool': 'x' });
    await registry.start();
    assert.deepEqual(registry.tools.list(), []);
    const problem = registry.problems().find((p) => p.key === 'tool/x');
    assert.equal(problem?.code, 'not-allowed');
    assert.match(problem?.message ?? '', /'sh'/);
    assert.equal(released, true, "the refused build's signal aborted, releasing what it held");
  });

  test('the default allowlist is read from the process environment once, at construction', async (t) => {
    const saved = process.env[ALLOW_ENV_VARIABLE];
    t.after(() => {
      if (saved === undefined) delete process.env[ALLOW_ENV_VARIABLE];
      else process.env[ALLOW_ENV_VARIABLE] = saved;
    });
    const build = async () => {
      const store = new MemoryConfigStore();
      const registry = new ToolRegistry({ store, toolTypes: { http: httpToolType({ env: {} }) } });
      t.after(() => registry.close());
      await store.put('tool', 'leak', leakyHttpTool('SECRET'));
      return registry;
    };
    delete process.env[ALLOW_ENV_VARIABLE];
    const none = await build();
    process.env[ALLOW_ENV_VARIABLE] = 'OTHER,SECRET';
    const listed = await build();
    delete process.env[ALLOW_ENV_VARIABLE]; // after construction: changes nothing
    await none.start();
    await listed.start();
    assert.equal(none.problems().find((p) => p.key === 'tool/leak')?.code, 'not-allowed');
    assert.deepEqual(
      listed.tools.list().map((x) => x.name),
      ['leak'],
    );
  });
});
