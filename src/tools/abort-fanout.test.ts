import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { z } from 'zod';
import { onAbort } from './abort-fanout.js';
import { FunctionTool, ToolSet } from './index.js';

/** Collects process warnings while `fn` runs. */
async function warningsDuring(fn: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const listener = (warning: Error): void => void seen.push(`${warning.name}: ${warning.message}`);
  process.on('warning', listener);
  try {
    await fn();
    // Warnings are emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', listener);
  }
  return seen;
}

test('fifty callbacks on one signal share one listener, run in order, and leave nothing behind', () => {
  const controller = new AbortController();
  const ran: number[] = [];
  const stops = Array.from({ length: 50 }, (_, i) => onAbort(controller.signal, () => void ran.push(i)));
  assert.equal(getEventListeners(controller.signal, 'abort').length, 1);
  stops[3]!();
  stops[3]!(); // idempotent
  controller.abort();
  assert.deepEqual(
    ran,
    Array.from({ length: 50 }, (_, i) => i).filter((i) => i !== 3),
  );
  assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
});

test('when the last callback leaves, the listener is detached from a long-lived signal', () => {
  const controller = new AbortController();
  let ran = 0;
  for (let round = 0; round < 3; round++) {
    const stops = Array.from({ length: 20 }, () =>
      onAbort(controller.signal, { handleEvent: () => void ran++ }),
    );
    for (const stop of stops) stop();
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
  }
  controller.abort();
  assert.equal(ran, 0);
});

test('a callback that stops another during the abort keeps it from running, as removeEventListener would', () => {
  const controller = new AbortController();
  const ran: string[] = [];
  let stopB = (): void => undefined;
  onAbort(controller.signal, () => {
    ran.push('a');
    stopB();
  });
  stopB = onAbort(controller.signal, () => void ran.push('b'));
  onAbort(controller.signal, () => void ran.push('c'));
  controller.abort();
  assert.deepEqual(ran, ['a', 'c']);
});

test('twenty parallel ToolSet calls on one caller signal: no MaxListeners warning, and one abort cancels them all', async () => {
  const tool = new FunctionTool(
    (_args: { n: number }, { signal }) =>
      new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
    { name: 'wait', description: 'Waits until cancelled', parameters: z.object({ n: z.number() }) },
  );
  const tools = new ToolSet([tool], { concurrency: 50 });
  const controller = new AbortController();
  const warnings = await warningsDuring(async () => {
    const calls = Array.from({ length: 20 }, (_, n) =>
      tools.call('wait', { n }, { signal: controller.signal }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    const results = await Promise.all(calls);
    assert.deepEqual(
      results.map((r) => [r.isError, r.error?.code]),
      Array.from({ length: 20 }, () => [true, 'cancelled']),
    );
  });
  assert.deepEqual(warnings, []);
});
