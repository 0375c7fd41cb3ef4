/**
 * @module Progress restarts a call's timeout up to `maxTotalTimeoutMs`, as MCP's
 * `resetTimeoutOnProgress` does: a tool that keeps reporting outlives its timeout, a quiet one does
 * not, and none outlives the cap. Timers are real but short.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { FunctionTool } from './function-tool.js';
import { ToolSet } from './tool-set.js';
import type { ToolCallContext } from './tool.js';

/** Reports progress every `everyMs` for `steps` steps, then answers; `seen` gets its deadline. */
function worker(steps: number, everyMs: number, seen: { deadline?: number | undefined } = {}): FunctionTool {
  return new FunctionTool(
    async (_args: Record<string, never>, ctx: ToolCallContext) => {
      seen.deadline = ctx.deadline;
      for (let i = 1; i <= steps; i++) {
        await sleep(everyMs, undefined, { signal: ctx.signal });
        ctx.progress?.({ progress: i, total: steps });
      }
      return 'done';
    },
    { name: 'work', description: 'Works in steps', parameters: z.object({}) },
  );
}

test('without a cap, progress does not restart the timeout', async () => {
  const result = await new ToolSet([worker(6, 40)], { timeoutMs: 120 }).call('work', {});
  assert.equal(result.error?.code, 'timeout');
  assert.match(result.content, /timed out after 120 ms/);
});

test('with a cap, a tool that keeps reporting outlives its timeout; its deadline is the cap', async () => {
  const seen: { deadline?: number | undefined } = {};
  const started = Date.now();
  const result = await new ToolSet([worker(6, 40, seen)], { timeoutMs: 120, maxTotalTimeoutMs: 5000 }).call(
    'work',
    {},
  );
  assert.equal(result.isError, false, result.content);
  assert.equal(result.content, 'done');
  assert.ok(Date.now() - started >= 200, 'ran past its 120 ms timeout');
  // What a remote tool sends on the wire: the cap, not the first timeout.
  assert.ok(
    seen.deadline !== undefined && Math.abs(seen.deadline - (started + 5000)) < 100,
    String(seen.deadline),
  );
});

test('a tool that goes quiet after reporting is cancelled one timeout after its last report', async () => {
  const quiet = new FunctionTool(
    async (_args: Record<string, never>, ctx: ToolCallContext) => {
      await sleep(50, undefined, { signal: ctx.signal });
      ctx.progress?.({ progress: 1 });
      await sleep(10_000, undefined, { signal: ctx.signal });
      return 'never';
    },
    { name: 'quiet', description: 'Goes quiet', parameters: z.object({}) },
  );
  const started = Date.now();
  const result = await new ToolSet([quiet], { timeoutMs: 150, maxTotalTimeoutMs: 10_000 }).call('quiet', {});
  assert.equal(result.error?.code, 'timeout');
  assert.match(result.content, /reported no progress for 150 ms and was cancelled/);
  assert.ok(Date.now() - started < 2000);
});

test('no call outlives the cap, however often it reports; a call option and the tool may set it', async () => {
  const started = Date.now();
  const capped = await new ToolSet([worker(50, 30)], { timeoutMs: 100 }).call(
    'work',
    {},
    { maxTotalTimeoutMs: 300 },
  );
  assert.equal(capped.error?.code, 'timeout');
  assert.match(capped.content, /ran to its total cap \(maxTotalTimeoutMs/);
  const took = Date.now() - started;
  assert.ok(took >= 280 && took < 1500, `took ${took} ms`);

  const tool = worker(6, 40);
  Object.defineProperty(tool, 'maxTotalTimeoutMs', { value: 5000 });
  const own = await new ToolSet([tool], { timeoutMs: 120 }).call('work', {});
  assert.equal(own.isError, false, own.content);
});

test('progress listeners still hear every report of a call whose timeout it restarts', async () => {
  const heard: number[] = [];
  const hooked: number[] = [];
  const tools = new ToolSet([worker(3, 5)], {
    maxTotalTimeoutMs: 5000,
    hooks: { onProgress: (event) => void hooked.push(event.progress) },
  });
  const result = await tools.call('work', {}, { onProgress: (update) => heard.push(update.progress) });
  assert.equal(result.isError, false);
  assert.deepEqual(heard, [1, 2, 3]);
  assert.deepEqual(hooked, [1, 2, 3]);
});

test('a bad cap is a usage error naming it', async () => {
  const result = await new ToolSet([worker(1, 1)]).call('work', {}, { maxTotalTimeoutMs: -5 });
  assert.equal(result.error?.code, 'usage');
  assert.match(result.content, /maxTotalTimeoutMs must be a positive number of milliseconds, got -5/);
  assert.throws(() => new ToolSet([], { maxTotalTimeoutMs: Number.NaN }), /maxTotalTimeoutMs/);
});
