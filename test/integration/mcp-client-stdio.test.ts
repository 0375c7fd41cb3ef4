/**
 * `mcpServerTools` against the SDK-built fixture server as a real stdio child process: discovery with
 * `$defs`, results, errors, timeouts reset by progress, MCP cancel, list_changed, restarts, cleanup.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { McpSession, mcpServerTools, type McpServerTools } from '../../src/adapters/mcp/index.js';
import { ToolUseAgent } from '../../src/agents/index.js';
import { ScriptedChatCompletionClient } from '../../src/models/index.js';
import { ToolbusError } from '../../src/errors/index.js';
import { ROOT, isAlive, stdioFixtureParams, waitFor } from '../fixtures/mcp-spawn.js';

describe('mcpServerTools over stdio (fixture server)', { timeout: 60_000 }, () => {
  let mcp: McpServerTools;
  const dir = mkdtempSync(join(tmpdir(), 'toolbus-mcp-'));
  const marker = join(dir, 'crashed');

  before(async () => {
    mcp = await mcpServerTools({
      ...stdioFixtureParams({ MCP_FIXTURE_CRASH_MARKER: marker }),
      id: 'fixture',
      timeoutMs: 400,
      maxTotalTimeoutMs: 3000,
      toolTimeoutsMs: { echo: 10_000, add: 10_000, media: 10_000, pid: 10_000, counter: 10_000 },
    });
  });
  after(async () => {
    await mcp.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('discovers every tool with its JSON Schema, $defs and $ref kept', () => {
    const names = mcp.list().map((t) => t.name);
    for (const name of ['echo', 'add', 'slow', 'fail', 'media', 'pid', 'counter', 'add_tool']) {
      assert.ok(names.includes(name), `missing ${name} in ${names.join(',')}`);
    }
    const echo = mcp.get('echo');
    assert.ok(echo);
    const params = echo.schema.parameters as Record<string, unknown>;
    assert.deepEqual((params.properties as Record<string, unknown>).message, { $ref: '#/$defs/Message' });
    assert.deepEqual((params.$defs as Record<string, { required: string[] }>).Message?.required, ['text']);
    assert.deepEqual(mcp.get('add')?.annotations, { readOnly: true });
  });

  test('joins text, turns structuredContent into JSON and describes media', async () => {
    const echo = await mcp.call('echo', { message: { text: 'hi', times: 2 } });
    assert.equal(echo.isError, false);
    assert.equal(echo.content, 'hi hi');
    const add = await mcp.call('add', '{"a": 2, "b": 3}');
    assert.deepEqual(JSON.parse(add.content), { sum: 5 });
    const media = await mcp.call('media', {});
    assert.equal(media.isError, false);
    assert.match(media.content, /^here is media/);
    assert.match(media.content, /\[image: image\/png, 70 bytes\]/);
    assert.match(media.content, /\[audio: audio\/wav, 12 bytes\]/);
    assert.match(media.content, /\[resource: file:\/\/\/notes.txt, text\/plain\]\nnote body/);
    assert.match(media.content, /\[resource: file:\/\/\/blob.bin, application\/octet-stream, 3 bytes\]/);
    assert.match(media.content, /\[resource link: big.csv <file:\/\/\/big.csv>, text\/csv\]/);
  });

  test('isError results and bad arguments become error results with codes', async () => {
    const failed = await mcp.call('fail', {});
    assert.equal(failed.isError, true);
    assert.equal(failed.error?.code, 'tool-error');
    assert.match(failed.content, /tool 'fail': the fixture tool failed on purpose/);
    const bad = await mcp.call('echo', { message: { times: 2 } });
    assert.equal(bad.isError, true);
    assert.equal(bad.error?.code, 'invalid-arguments');
    assert.match(bad.content, /message\.text/);
    const unknown = await mcp.call('nope', {});
    assert.equal(unknown.error?.code, 'unknown-tool');
  });

  test('one long-lived session serves every call', async () => {
    const pids = new Set<string>();
    for (let i = 0; i < 5; i++) pids.add((await mcp.call('pid', {})).content);
    assert.equal(pids.size, 1);
    assert.equal(mcp.session.connectCount, 1);
    assert.equal(String(mcp.session.childPid), [...pids][0]);
  });

  test('progress resets the timeout; silence beyond it times out', async () => {
    // 6 steps of 150 ms: longer than the 400 ms timeout in total, but progress arrives every 150 ms.
    const ok = await mcp.call('slow', { steps: 6, stepMs: 150 });
    assert.equal(ok.isError, false, ok.content);
    assert.equal(ok.content, 'done after 6 steps');
    const late = await mcp.call('slow', { steps: 1, stepMs: 1500 });
    assert.equal(late.isError, true);
    assert.equal(late.error?.code, 'timeout');
    assert.match(late.content, /timed out after 400 ms without progress and was cancelled/);
    assert.equal(late.error?.toolName, 'slow', 'code branching on the error sees which tool timed out');
    // Progress resets the timeout only up to the total cap.
    const capped = await mcp.call('slow', { steps: 40, stepMs: 100 });
    assert.equal(capped.error?.code, 'timeout');
    assert.match(capped.content, /total cap of 3000 ms/);
  });

  test('names MCP allows but models reject are mapped reversibly', async () => {
    const tool = mcp.list().find((t) => mcp.remoteName(t.name) === 'math.double');
    assert.ok(tool, 'no tool maps back to math.double');
    assert.match(tool.name, /^[a-zA-Z0-9_-]{1,64}$/);
    assert.notEqual(tool.name, 'math.double');
    assert.equal((await mcp.call(tool.name, { x: 21 })).content, '42');
  });

  test('a timeout cancels the work on the server too', async () => {
    const before = Number((await mcp.call('cancel_seen', {})).content);
    const late = await mcp.call('slow', { steps: 1, stepMs: 2000 });
    assert.equal(late.error?.code, 'timeout');
    const seen = await waitFor(
      async () => Number((await mcp.call('cancel_seen', {})).content) > before,
      5000,
      50,
    );
    assert.ok(seen, 'the server kept running the timed-out call');
  });

  test('cancellation sends the MCP cancel: the server sees its signal abort', async () => {
    const before = Number((await mcp.call('cancel_seen', {})).content);
    const controller = new AbortController();
    const pending = mcp.call('slow', { steps: 20, stepMs: 100 }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 150);
    const result = await pending;
    assert.equal(result.isError, true);
    assert.equal(result.error?.code, 'cancelled');
    const seen = await waitFor(
      async () => Number((await mcp.call('cancel_seen', {})).content) > before,
      5000,
      50,
    );
    assert.ok(seen, 'the server never saw the cancellation');
  });

  test('tools/list_changed refreshes the live set', async () => {
    const changed = new Promise<readonly string[]>((resolve) => {
      const off = mcp.onChange((tools) => {
        if (tools.some((t) => t.name === 'extra_tool')) {
          off();
          resolve(tools.map((t) => t.name));
        }
      });
    });
    await mcp.call('add_tool', { name: 'extra_tool' });
    const names = await changed;
    assert.ok(names.includes('extra_tool'));
    assert.equal((await mcp.tools.call('extra_tool', {})).content, 'hello from extra_tool');
    const removed = new Promise<void>((resolve) => {
      const off = mcp.onChange((tools) => {
        if (!tools.some((t) => t.name === 'extra_tool')) {
          off();
          resolve();
        }
      });
    });
    await mcp.call('remove_tool', { name: 'extra_tool' });
    await removed;
    assert.equal(mcp.get('extra_tool'), undefined);
  });

  test('server restart: read-only calls in flight are retried once, over one reconnect', async () => {
    rmSync(marker, { force: true });
    const pidBefore = mcp.session.childPid;
    const connectsBefore = mcp.session.connectCount;
    // The first call makes the server exit mid-call; all three are in flight on the dying connection.
    const results = await Promise.all([1, 2, 3].map(() => mcp.call('flaky_read', {})));
    for (const result of results) {
      assert.equal(result.isError, false, result.content);
      assert.match(result.content, /^read from \d+$/);
    }
    assert.notEqual(mcp.session.childPid, pidBefore);
    assert.equal(mcp.session.connectCount, connectsBefore + 1);
  });

  test('server restart: a tool that is not idempotent is not retried and says so', async () => {
    rmSync(marker, { force: true });
    const result = await mcp.call('flaky_write', {});
    assert.equal(result.isError, true);
    assert.equal(result.error?.code, 'unavailable');
    assert.match(result.content, /restarted or its session expired during the call/);
    assert.match(result.content, /not retried because the tool is not annotated read-only or idempotent/);
    // The session reconnects: the next call works.
    const after = await mcp.call('pid', {});
    assert.equal(after.isError, false, after.content);
  });

  test('close() stops the child process and is idempotent', async () => {
    const other = await mcpServerTools({ ...stdioFixtureParams(), protocol: 'legacy' });
    assert.equal(other.session.protocolEra, 'legacy');
    const pid = other.session.childPid;
    assert.ok(pid !== null && isAlive(pid));
    await other.close();
    await other.close();
    assert.ok(await waitFor(() => !isAlive(pid), 5000), 'child still running after close');
    const afterClose = await other.call('pid', {});
    assert.equal(afterClose.isError, true);
    assert.equal(afterClose.error?.code, 'closed');
  });
});

test(
  'namePrefix: names map back to the remote name and stay within 64 characters',
  { timeout: 30_000 },
  async (t) => {
    const prefixed = await mcpServerTools(stdioFixtureParams(), { namePrefix: 'files_' });
    t.after(() => prefixed.close());
    const double = prefixed.list().find((tool) => prefixed.remoteName(tool.name) === 'math.double');
    assert.ok(double, 'no prefixed tool maps back to math.double');
    assert.match(double.name, /^files_/);
    const long = `t${'x'.repeat(61)}`; // valid alone, 68 characters with the prefix
    await prefixed.call('files_add_tool', { name: long });
    await prefixed.refresh();
    assert.deepEqual(prefixed.problems, []);
    const added = prefixed.list().find((tool) => prefixed.remoteName(tool.name) === long);
    assert.ok(added, `no tool maps back to ${long}`);
    assert.match(added.name, /^files_[a-zA-Z0-9_-]{1,58}$/);
    assert.equal((await prefixed.call(added.name, {})).content, `hello from ${long}`);
  },
);

test(
  "stderr 'pipe': a server that writes a lot to stderr is not blocked by a full pipe",
  { timeout: 30_000 },
  async (t) => {
    const params = stdioFixtureParams();
    const chatty = await mcpServerTools({
      ...params,
      // Linux writes to a stderr pipe synchronously: 1 MiB blocks the child until someone reads it.
      args: [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `process.stderr.write('x'.repeat(1 << 20)); await import(${JSON.stringify(params.args.at(-1))});`,
      ],
      stderr: 'pipe',
      connectTimeoutMs: 10_000,
    });
    t.after(() => chatty.close());
    assert.equal((await chatty.call('echo', { message: { text: 'still here' } })).content, 'still here');
  },
);

test('include: a name the server does not offer is reported in problems', { timeout: 30_000 }, async (t) => {
  const some = await mcpServerTools(stdioFixtureParams(), { include: ['echo', 'ecco'] });
  t.after(() => some.close());
  assert.deepEqual(
    some.list().map((tool) => tool.name),
    ['echo'],
  );
  assert.equal(some.problems.length, 1);
  assert.equal(some.problems[0]?.remoteName, 'ecco');
  assert.match(some.problems[0]?.message ?? '', /offers no tool 'ecco'/);
});

test('a tools/list that times out names the server once', { timeout: 30_000 }, async (t) => {
  const session = new McpSession({
    ...stdioFixtureParams({ MCP_FIXTURE_HANG_LIST: '1' }),
    id: 'slowlist',
    timeoutMs: 300,
  });
  t.after(() => session.close());
  await assert.rejects(session.listTools(), (e: unknown) => {
    assert.ok(e instanceof ToolbusError);
    assert.equal(e.code, 'timeout');
    assert.match(e.message, /^listing the tools on MCP server 'slowlist' timed out after 300 ms/);
    assert.equal(e.message.split("'slowlist'").length, 2, e.message);
    return true;
  });
});

test(
  'timeouts longer than a timer can hold (24.8 days) mean "no practical limit", not an instant timeout',
  { timeout: 30_000 },
  async (t) => {
    // Node runs a setTimeout over 2^31-1 ms after 1 ms; the SDK hands these values to setTimeout.
    const patient = await mcpServerTools({
      ...stdioFixtureParams(),
      timeoutMs: 3_000_000_000,
      connectTimeoutMs: 3_000_000_000,
      maxTotalTimeoutMs: 4_000_000_000,
    });
    t.after(() => patient.close());
    const result = await patient.call('slow', { steps: 1, stepMs: 100 });
    assert.equal(result.isError, false, result.content);
  },
);

test(
  'both protocol eras: auto negotiates 2026-07-28 with the fixture, legacy speaks 2025',
  { timeout: 30_000 },
  async (t) => {
    const modern = await mcpServerTools(stdioFixtureParams());
    t.after(() => modern.close());
    assert.equal(modern.session.protocolEra, 'modern');
    assert.equal(modern.session.protocolVersion, '2026-07-28');
    assert.equal((await modern.call('echo', { message: { text: 'x' } })).content, 'x');
  },
);

test('bad params and unreachable servers reject with typed errors', { timeout: 30_000 }, async () => {
  await assert.rejects(mcpServerTools({ url: 'not a url' }), (e: unknown) => {
    assert.ok(e instanceof ToolbusError);
    assert.equal(e.code, 'invalid-config');
    assert.match(e.message, /'url' must be an absolute URL/);
    return true;
  });
  await assert.rejects(
    mcpServerTools({
      command: process.execPath,
      args: ['-e', 'process.exit(1)'],
      stderr: 'ignore',
      protocol: 'legacy',
    }),
    (e: unknown) => e instanceof ToolbusError && e.code === 'unavailable',
  );
});

test(
  'stdio children are killed when the parent process exits without closing; twelve sessions share one exit listener',
  { timeout: 60_000 },
  async () => {
    // Twelve sessions: one exit listener each would trip Node's MaxListeners warning (limit ten).
    const script = `
    const { mcpServerTools } = await import(${JSON.stringify(join(ROOT, 'src/adapters/mcp/index.ts'))});
    const { stdioFixtureParams } = await import(${JSON.stringify(join(ROOT, 'test/fixtures/mcp-spawn.ts'))});
    const warnings = [];
    process.on('warning', (w) => warnings.push(w.name));
    const before = process.listenerCount('exit');
    const all = await Promise.all(
      Array.from({ length: 12 }, () => mcpServerTools({ ...stdioFixtureParams(), protocol: 'legacy', connectTimeoutMs: 30000 })),
    );
    await all[0].close();
    await new Promise((r) => setImmediate(r));
    process.stdout.write(JSON.stringify({
      pids: all.slice(1).map((m) => m.session.childPid),
      added: process.listenerCount('exit') - before,
      warnings,
    }) + '\\n');
    process.exit(0);
  `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    await new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const report = JSON.parse(out.trim() || '{}') as { pids?: number[]; added?: number; warnings?: string[] };
    assert.equal(report.pids?.length, 11, `no child pids printed: '${out}'`);
    assert.equal(report.added, 1, 'one exit listener for every session');
    assert.deepEqual(report.warnings, []);
    for (const pid of report.pids ?? []) {
      assert.ok(pid > 0, `a session without a child pid: '${out}'`);
      assert.ok(await waitFor(() => !isAlive(pid), 10_000), `MCP child ${pid} outlived its parent`);
    }
  },
);

test(
  'as the guide shows: await mcpServerTools(...) and hand the tools to an agent',
  { timeout: 30_000 },
  async (t) => {
    const tools = await mcpServerTools(stdioFixtureParams());
    t.after(() => tools.close());
    const model = new ScriptedChatCompletionClient([
      [{ id: 'call_1', name: 'add', arguments: '{"a": 2, "b": 3}' }],
      'The sum is 5.',
    ]);
    const agent = new ToolUseAgent({ model, tools });
    assert.equal(await agent.ask('What is 2 + 3?'), 'The sum is 5.');
    const offered = model.calls[0]?.tools.map((schema) => schema.name) ?? [];
    assert.ok(offered.includes('add') && offered.includes('echo'), offered.join(','));
    const fed = JSON.stringify(model.calls[1]?.messages);
    assert.match(fed, /\{\\"sum\\":5\}/);
  },
);
