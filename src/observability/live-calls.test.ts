import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { FunctionTool, ToolSet } from '../tools/index.js';
import { ToolbusError } from '../errors/index.js';
import {
  LIVE_CALL_BUCKET_MS,
  LIVE_CALL_BUCKETS,
  LIVE_CALL_TEXT_BYTES,
  LiveCalls,
  type LiveCallEvent,
  type LiveCallsOptions,
} from './index.js';
import { cutText } from './live-calls.js';

const echo = new FunctionTool(async ({ text }: { text: string }) => `echo: ${text}`, {
  name: 'echo',
  description: 'Echo the text',
  parameters: z.object({ text: z.string() }),
});
const boom = new FunctionTool(
  async () => {
    throw new Error('the tool broke');
  },
  { name: 'boom', description: 'Always fails', parameters: z.object({}) },
);
const steps = new FunctionTool(
  async (_args: Record<string, never>, ctx) => {
    ctx.progress?.({ progress: 1, total: 2, message: 'half way' });
    ctx.progress?.({ progress: 2, total: 2 });
    return 'done';
  },
  { name: 'steps', description: 'Reports progress', parameters: z.object({}) },
);

function setup(options: LiveCallsOptions = {}) {
  const live = new LiveCalls(options);
  const tools = new ToolSet([echo, boom, steps], { hooks: live.toolSetHooks() });
  return { live, tools };
}

describe('LiveCalls', () => {
  test('a call shows as running while it runs, then ok with its result, caller and duration', async () => {
    const { live, tools } = setup();
    const events: LiveCallEvent[] = [];
    live.subscribe((e) => events.push(e));
    const result = await tools.call('echo', '{"text":"hi"}', { user: 'alice', caller: 'http:admin@x' });
    assert.equal(result.isError, false);
    const calls = events.filter((e) => e.type === 'call').map((e) => e.call);
    assert.deepEqual(
      calls.map((c) => [c.status, c.tool, c.user, c.arguments]),
      [
        ['running', 'echo', 'alice', '{"text":"hi"}'],
        ['ok', 'echo', 'alice', '{"text":"hi"}'],
      ],
    );
    assert.equal(calls[0]!.callId, result.callId);
    assert.equal(calls[1]!.content, 'echo: hi');
    assert.equal(calls[1]!.caller, 'http:admin@x');
    assert.equal(typeof calls[1]!.durationMs, 'number');
    assert.equal(live.inFlight, 0);
    assert.deepEqual(
      live.recent().map((c) => c.status),
      ['ok'],
      'the kept call is the ended one',
    );
  });

  test('a failed call is an error with its code; one that never started (unknown tool) shows too', async () => {
    const { live, tools } = setup();
    await tools.call('boom', {});
    await tools.call('nope', '{"a":1}');
    const [unknown, failed] = live.recent();
    assert.deepEqual([failed!.tool, failed!.status, failed!.code], ['boom', 'error', 'tool-error']);
    assert.deepEqual([unknown!.tool, unknown!.status, unknown!.code], ['nope', 'error', 'unknown-tool']);
    assert.equal(unknown!.arguments, '{"a":1}');
  });

  test('progress reports reach subscribers with the call id and tool', async () => {
    const { live, tools } = setup();
    const events: LiveCallEvent[] = [];
    live.subscribe((e) => events.push(e));
    const result = await tools.call('steps', {});
    const progress = events.filter((e) => e.type === 'progress').map((e) => e.progress);
    assert.deepEqual(progress, [
      { callId: result.callId, tool: 'steps', progress: 1, total: 2, message: 'half way' },
      { callId: result.callId, tool: 'steps', progress: 2, total: 2 },
    ]);
  });

  test('keeps only the newest calls (capacity), newest first; recent filters by tool, user and limit', async () => {
    const { live, tools } = setup({ capacity: 3 });
    for (const [text, user] of [
      ['1', 'a'],
      ['2', 'b'],
      ['3', 'a'],
      ['4', 'b'],
    ] as const) {
      await tools.call('echo', { text }, { user });
    }
    await tools.call('boom', {}, { user: 'a' });
    assert.deepEqual(
      live.recent().map((c) => [c.tool, c.arguments]),
      [
        ['boom', '{}'],
        ['echo', '{"text":"4"}'],
        ['echo', '{"text":"3"}'],
      ],
    );
    assert.deepEqual(
      live.recent({ tool: 'echo', user: 'a' }).map((c) => c.arguments),
      ['{"text":"3"}'],
    );
    assert.equal(live.recent({ limit: 1 }).length, 1);
  });

  test('arguments and results are cut at 2 KB, never inside a character', async () => {
    const { live, tools } = setup();
    const long = 'é'.repeat(3000); // 2 bytes each
    await tools.call('echo', { text: long });
    const [call] = live.recent();
    assert.ok(call!.arguments.endsWith('…'));
    assert.ok(Buffer.byteLength(call!.arguments) <= LIVE_CALL_TEXT_BYTES + Buffer.byteLength('…'));
    assert.ok(call!.content!.endsWith('…'));
    assert.equal(cutText('short'), 'short');
    assert.equal(cutText('😀😀', 5), '😀…', 'a 4-byte character is kept whole or not at all');
  });

  test('a subscriber that throws breaks neither the call nor the other subscribers; unsubscribe stops it', async () => {
    const { live, tools } = setup();
    live.subscribe(() => {
      throw new Error('listener bug');
    });
    const seen: string[] = [];
    const stop = live.subscribe((e) => {
      if (e.type === 'call') seen.push(e.call.status);
    });
    const result = await tools.call('echo', { text: 'x' });
    assert.equal(result.isError, false);
    assert.deepEqual(seen, ['running', 'ok']);
    stop();
    await tools.call('echo', { text: 'y' });
    assert.deepEqual(seen, ['running', 'ok']);
  });

  test('arguments JSON cannot write are recorded as such, and the call still runs', async () => {
    const { live } = setup();
    const cyclic: Record<string, unknown> = { text: 'x' };
    cyclic['self'] = cyclic;
    const tools = new ToolSet(
      [
        new FunctionTool(async () => 'ok', {
          name: 'any',
          description: 'Any',
          parameters: z.object({}).passthrough(),
        }),
      ],
      {
        hooks: live.toolSetHooks(),
      },
    );
    const result = await tools.call('any', cyclic);
    assert.equal(result.isError, false, result.content);
    assert.equal(live.recent()[0]!.arguments, '(arguments that are not JSON)');
  });

  test('a subscriber over the cap is refused with too-many-requests', () => {
    const live = new LiveCalls({ maxListeners: 1 });
    live.subscribe(() => undefined);
    assert.throws(
      () => live.subscribe(() => undefined),
      (error: unknown) => error instanceof ToolbusError && error.code === 'too-many-requests',
    );
  });

  test('rates: 60 five-second buckets, oldest first, zero-filled, counting calls and errors by when they ended', async () => {
    let now = 1_000 * LIVE_CALL_BUCKET_MS; // the start of a bucket
    const { live, tools } = setup({ now: () => now });
    await tools.call('echo', { text: 'a' });
    await tools.call('boom', {});
    now += LIVE_CALL_BUCKET_MS; // the next bucket
    await tools.call('echo', { text: 'b' });
    const { bucketMs, points } = live.rates();
    assert.equal(bucketMs, LIVE_CALL_BUCKET_MS);
    assert.equal(points.length, LIVE_CALL_BUCKETS);
    assert.equal(points.at(-1)!.at, 1_001 * LIVE_CALL_BUCKET_MS);
    assert.deepEqual(points.slice(-2), [
      { at: 1_000 * LIVE_CALL_BUCKET_MS, calls: 2, errors: 1 },
      { at: 1_001 * LIVE_CALL_BUCKET_MS, calls: 1, errors: 0 },
    ]);
    assert.ok(points.slice(0, -2).every((p) => p.calls === 0 && p.errors === 0));
    // Five minutes later the old buckets have gone, even though their slots were never reused.
    now += LIVE_CALL_BUCKETS * LIVE_CALL_BUCKET_MS;
    assert.ok(live.rates().points.every((p) => p.calls === 0));
  });

  test('options are checked', () => {
    assert.throws(() => new LiveCalls({ capacity: 0 }), /capacity/);
    assert.throws(() => new LiveCalls({ maxListeners: 1.5 }), /maxListeners/);
  });
});
