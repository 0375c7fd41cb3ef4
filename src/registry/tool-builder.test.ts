import { describe, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import type { JsonValue } from '../schema/index.js';
import { FunctionTool } from '../tools/index.js';
import { ToolBuilder } from './tool-builder.js';
import type { ToolBuilderOptions } from './tool-builder.js';
import type { BuildResult, Lookup, ToolSource } from './tool-set-plan.js';
import type { ToolTypeContext, ToolTypeFactory } from './tool-type.js';

/** Lets settled builds run their follow-ups. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

const echo = (name: string) =>
  new FunctionTool(() => name, { name, description: name, parameters: z.object({}) });

function builder(t: { after: (fn: () => unknown) => void }, options: Partial<ToolBuilderOptions> = {}) {
  const controller = new AbortController();
  t.after(() => controller.abort());
  let late = 0;
  const tools = new ToolBuilder({
    factories: new Map(),
    bus: undefined,
    model: undefined,
    allowlist: { commands: [], env: [] },
    buildTimeoutMs: Infinity,
    signal: controller.signal,
    onLateBuild: () => void late++,
    ...options,
  });
  return { tools, controller, late: () => late };
}

const source = (descriptor: JsonValue, lookup: Lookup = () => undefined, key = 'k'): ToolSource => ({
  source: `tool/${key}`,
  key,
  descriptor,
  lookup,
});

function errorOf(result: BuildResult): { code?: string; message: string } {
  assert.ok('error' in result, 'expected the build to fail');
  return result.error as { code?: string; message: string };
}

describe('ToolBuilder', () => {
  test('an unchanged item whose looked-up items are unchanged is reused, not built again', async (t) => {
    let calls = 0;
    let server: JsonValue | undefined = { url: 'http://127.0.0.1:1' };
    const uses: ToolTypeFactory = (_d, ctx) => (calls++, ctx.lookup('mcp', 'server'), echo(ctx.key));
    const f = builder(t, { factories: new Map([['uses', uses]]) });
    const src = source({ type: 'uses' }, (type) => (type === 'mcp' ? server : undefined));
    const first = await f.tools.build(src, undefined);
    assert.ok('built' in first);
    assert.equal(first.built.lookups.get('mcp/server')?.json, JSON.stringify(server));
    assert.equal(await f.tools.build(src, first.built).then((r) => 'built' in r && r.built), first.built);
    assert.equal(calls, 1);

    server = { url: 'http://127.0.0.1:2' }; // what it looked up changed: built again
    const second = await f.tools.build(src, first.built);
    assert.ok('built' in second && second.built !== first.built);
    assert.equal(calls, 2);
  });

  test('a slow build times out and goes on; it is not waited for again, and asks to be taken in', async (t) => {
    mock.timers.enable({ apis: ['setTimeout'] });
    t.after(() => mock.timers.reset());
    let calls = 0;
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const slow: ToolTypeFactory = async (_d, ctx) => (calls++, await finished, echo(ctx.key));
    const f = builder(t, { factories: new Map([['slow', slow]]), buildTimeoutMs: 50 });
    const src = source({ type: 'slow' });

    const first = f.tools.build(src, undefined);
    mock.timers.tick(50);
    const timedOut = errorOf(await first);
    assert.equal(timedOut.code, 'timeout');
    assert.match(timedOut.message, /longer than 50 ms \(buildTimeoutMs\)/);
    // The next reload gets the same answer at once, from the same build.
    assert.equal(errorOf(await f.tools.build(src, undefined)).code, 'timeout');
    assert.equal(f.late(), 0);

    finish();
    await flush();
    assert.equal(f.late(), 1, 'the finished build asks for a reload');
    const result = await f.tools.build(src, undefined);
    assert.ok('built' in result && result.built.tool.name === 'k');
    assert.equal(calls, 1);
  });

  test('an edit drops the running build: its signal aborts and a new one starts', async (t) => {
    const signals: AbortSignal[] = [];
    const hang: ToolTypeFactory = (_d, ctx) => (
      signals.push(ctx.signal),
      new Promise<never>(() => undefined)
    );
    const f = builder(t, { factories: new Map([['hang', hang]]), buildTimeoutMs: 1 });
    errorOf(await f.tools.build(source({ type: 'hang', v: 1 }), undefined));
    errorOf(await f.tools.build(source({ type: 'hang', v: 2 }), undefined));
    assert.equal(signals.length, 2);
    assert.equal(signals[0]!.aborted, true);
    assert.equal(signals[1]!.aborted, false);
    f.tools.keepOnly(new Set());
    assert.equal(signals[1]!.aborted, true);
  });

  test('a looked-up item the allowlist refuses fails the build even when the factory carries on', async (t) => {
    const careless: ToolTypeFactory = (_d, ctx) => {
      try {
        ctx.lookup('mcp', 'server');
      } catch {
        // carries on without it
      }
      return echo(ctx.key);
    };
    const f = builder(t, { factories: new Map([['careless', careless]]) });
    const src = source({ type: 'careless' }, () => ({ command: 'rm', args: ['-rf', '/'] }));
    const error = errorOf(await f.tools.build(src, undefined));
    assert.equal(error.code, 'not-allowed');
  });

  test('a tool item the allowlist refuses is refused before its factory runs', async (t) => {
    let called = false;
    const http: ToolTypeFactory = () => ((called = true), echo('x'));
    const f = builder(t, { factories: new Map([['http', http]]) });
    const item = { type: 'http', url: 'http://127.0.0.1:1', headers: { Authorization: { env: 'SECRET' } } };
    assert.equal(errorOf(await f.tools.build(source(item), undefined)).code, 'not-allowed');
    assert.equal(called, false);
  });

  test('an unknown type names the known ones; a provided type that is not installed says how', async (t) => {
    const f = builder(t, { factories: new Map([['function', () => echo('f')]]) });
    const unknown = errorOf(await f.tools.build(source({ type: 'nope' }), undefined));
    assert.equal(unknown.code, 'invalid-config');
    assert.match(unknown.message, /unknown tool type 'nope'; known types: function/);
    const http = errorOf(await f.tools.build(source({ type: 'http' }), undefined));
    assert.match(http.message, /pass toolTypes: \{ http: httpToolType\(\) \}/);
  });

  test('when the signal aborts, running builds are dropped and their waiters get closed', async (t) => {
    let signal!: AbortSignal;
    const hang: ToolTypeFactory = (_d, ctx: ToolTypeContext) => (
      (signal = ctx.signal),
      new Promise<never>(() => undefined)
    );
    const f = builder(t, { factories: new Map([['hang', hang]]) });
    const waiting = f.tools.build(source({ type: 'hang' }), undefined);
    await flush();
    f.controller.abort();
    assert.equal(errorOf(await waiting).code, 'closed');
    assert.equal(signal.aborted, true);
  });
});
