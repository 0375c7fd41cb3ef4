import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { ToolbusError } from '../errors/index.js';
import { FunctionTool } from './function-tool.js';
import { LiveToolSet } from './live-tool-set.js';
import { ToolSet } from './tool-set.js';

function version(v: string, wait?: Promise<void>, started?: () => void): FunctionTool {
  return new FunctionTool(
    async () => {
      started?.();
      await wait;
      return v;
    },
    { name: 'lookup', description: `Lookup ${v}.`, parameters: z.object({}) },
  );
}

describe('LiveToolSet', () => {
  test('a swap during an in-flight call: the call finishes on the set it started with', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const live = new LiveToolSet([version('v1', held, started)]);
    const first = live.call('lookup', '{}');
    await running;

    const v2 = new ToolSet([version('v2')]);
    live.replace(v2);
    assert.equal(live.current, v2);
    assert.equal((await live.call('lookup', '{}')).content, 'v2');

    release();
    assert.equal((await first).content, 'v1');
  });

  test('onChange listeners see the new set; the returned function unsubscribes', () => {
    const live = new LiveToolSet();
    assert.deepEqual(live.list(), []);
    const seen: string[][] = [];
    const off = live.onChange((set) => seen.push(set.list().map((t) => t.name)));
    live.replace([version('v1')]);
    off();
    live.replace([]);
    assert.deepEqual(seen, [['lookup']]);
    assert.equal(live.get('lookup'), undefined);
  });

  test('a rejected replacement (duplicate names) leaves the current set in place', () => {
    const live = new LiveToolSet([version('v1')]);
    const before = live.current;
    assert.throws(
      () => live.replace([version('a'), version('b')]),
      (e: unknown) => e instanceof ToolbusError && e.code === 'invalid-name',
    );
    assert.equal(live.current, before);
  });

  test('plain tools are wrapped with the options given at construction', async () => {
    const live = new LiveToolSet([], { timeoutMs: 10 });
    live.replace([version('never', new Promise(() => {}))]);
    const result = await live.call('lookup', '{}');
    assert.equal(result.error?.code, 'timeout');
  });
});
