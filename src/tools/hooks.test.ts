import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hookList, notifyHooks, runHooks, type Hook } from './hooks.js';

describe('hooks', () => {
  test('a single function and a list both run, in order', () => {
    const seen: string[] = [];
    notifyHooks<string>((e) => seen.push(`one:${e}`), 'a');
    notifyHooks<string>([(e) => seen.push(`first:${e}`), (e) => seen.push(`second:${e}`)], 'b');
    notifyHooks<string>(undefined, 'c');
    assert.deepEqual(seen, ['one:a', 'first:b', 'second:b']);
  });

  test('an observer that throws or rejects neither stops the others nor leaves an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on('unhandledRejection', onUnhandled);
    try {
      const seen: number[] = [];
      notifyHooks<number>(
        [
          () => {
            throw new Error('sync');
          },
          () => Promise.reject(new Error('async')),
          (n) => seen.push(n),
        ],
        7,
      );
      assert.deepEqual(seen, [7]);
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  test("runHooks 'veto' awaits each in turn and stops at the first failure", async () => {
    const seen: string[] = [];
    const hooks = hookList<string>([
      async (e) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        seen.push(`slow:${e}`);
      },
      () => {
        throw new Error('denied');
      },
      (e) => seen.push(`never:${e}`),
    ]);
    await assert.rejects(Promise.resolve(runHooks(hooks, 'x', 'veto')), /denied/);
    assert.deepEqual(seen, ['slow:x']);
  });

  test('runHooks with synchronous hooks only runs them at once and returns no promise', async () => {
    const seen: string[] = [];
    const hooks = hookList<string>([
      (e) => seen.push(`a:${e}`),
      () => {
        throw new Error('refused');
      },
      (e) => seen.push(`b:${e}`),
    ]);
    assert.equal(runHooks(hooks, 'z', 'observe'), undefined);
    assert.deepEqual(seen, ['a:z', 'b:z']);
    // A synchronous veto is still a rejection, and stops the rest.
    const vetoed = runHooks(hooks, 'w', 'veto');
    assert.ok(vetoed instanceof Promise);
    await assert.rejects(vetoed, /refused/);
    assert.deepEqual(seen, ['a:z', 'b:z', 'a:w']);
  });

  test("runHooks 'observe' runs every hook and absorbs failures", async () => {
    const seen: string[] = [];
    const hooks = hookList<string>([() => Promise.reject(new Error('broken')), (e) => seen.push(e)]);
    await runHooks(hooks, 'y', 'observe');
    assert.deepEqual(seen, ['y']);
  });

  test('hookList copies the list, so editing the option later changes nothing', () => {
    const list: ((e: number) => unknown)[] = [() => undefined];
    const hook: Hook<number> = list;
    const copied = hookList(hook);
    list.push(() => undefined);
    assert.equal(copied.length, 1);
    assert.equal(hookList<number>(undefined).length, 0);
  });
});
