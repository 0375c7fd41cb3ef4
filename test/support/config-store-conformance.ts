/**
 * @module A reusable conformance suite for `ConfigStore` backends: every backend must pass it.
 *
 * @example
 * ```ts
 * runConfigStoreConformance('MemoryConfigStore', () => new MemoryConfigStore());
 * runConfigStoreConformance('NatsKvConfigStore', async () => NatsKvConfigStore.connect({ servers }));
 * ```
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ConfigChange, ConfigStore } from '../../src/config/index.js';
import { ToolbusError } from '../../src/errors/index.js';

/** Options of {@link runConfigStoreConformance}. */
export interface ConformanceOptions {
  /** How long to wait for a watch event before failing. @default 5000 */
  waitMs?: number;
}

const iterators = new WeakMap<AsyncIterable<ConfigChange>, AsyncIterator<ConfigChange>>();

/** Reads `count` changes from a watch (repeated calls continue the same iteration), failing after `waitMs`. */
export async function takeChanges(
  iterable: AsyncIterable<ConfigChange>,
  count: number,
  waitMs = 5000,
): Promise<ConfigChange[]> {
  const out: ConfigChange[] = [];
  let it = iterators.get(iterable);
  if (!it) {
    it = iterable[Symbol.asyncIterator]();
    iterators.set(iterable, it);
  }
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`saw ${out.length} of ${count} changes within ${waitMs} ms`)),
      waitMs,
    );
  });
  try {
    while (out.length < count) {
      const r = await Promise.race([it!.next(), timeout]);
      if (r.done) break;
      out.push(r.value);
    }
  } finally {
    clearTimeout(timer);
  }
  return out;
}

/**
 * Registers a `describe` block of tests that any `ConfigStore` must pass. `makeStore` gets a fresh,
 * empty store per test; the suite closes it.
 */
export function runConfigStoreConformance(
  name: string,
  makeStore: () => ConfigStore | Promise<ConfigStore>,
  options: ConformanceOptions = {},
): void {
  const waitMs = options.waitMs ?? 5000;
  describe(`ConfigStore conformance: ${name}`, () => {
    const withStore =
      (fn: (store: ConfigStore) => Promise<void>) => async (t: { after: (f: () => unknown) => void }) => {
        const store = await makeStore();
        t.after(() => store.close());
        await fn(store);
      };

    test(
      'put then get returns the parsed value and the new revision',
      withStore(async (store) => {
        const r0 = await store.revision();
        const rev = await store.put(
          'tool-service',
          'joke-service',
          '{"id": "joke-service", "config-params": []}',
        );
        assert.ok(rev > r0);
        const item = await store.get('tool-service', 'joke-service');
        assert.deepEqual(item, {
          type: 'tool-service',
          key: 'joke-service',
          value: { id: 'joke-service', 'config-params': [] },
          revision: rev,
        });
        assert.equal(await store.revision(), rev);
      }),
    );

    test(
      'a parsed value is stored as JSON and later caller changes do not leak in',
      withStore(async (store) => {
        const value = { name: 'x', args: [1, 2] };
        await store.put('tool', 'x', value);
        value.args.push(3);
        assert.deepEqual((await store.get('tool', 'x'))?.value, { name: 'x', args: [1, 2] });
        await store.put('tool', 's', JSON.stringify('just a string'));
        assert.equal((await store.get('tool', 's'))?.value, 'just a string');
      }),
    );

    test(
      'get of a missing item resolves undefined; delete reports whether it existed',
      withStore(async (store) => {
        assert.equal(await store.get('tool', 'nope'), undefined);
        assert.equal(await store.delete('tool', 'nope'), false);
        await store.put('tool', 'a', '{}');
        assert.equal(await store.delete('tool', 'a'), true);
        assert.equal(await store.get('tool', 'a'), undefined);
      }),
    );

    test(
      'list returns items of one type sorted by key, or of all types sorted by type then key',
      withStore(async (store) => {
        await store.put('tool', 'b', '1');
        await store.put('tool-service', 'z', '2');
        await store.put('tool', 'a', '3');
        assert.deepEqual(
          (await store.list('tool')).map((i) => i.key),
          ['a', 'b'],
        );
        assert.deepEqual(
          (await store.list()).map((i) => `${i.type}/${i.key}`),
          ['tool/a', 'tool/b', 'tool-service/z'],
        );
        assert.deepEqual(await store.list('mcp'), []);
      }),
    );

    test(
      'bad JSON text rejects with invalid-config and the line, column and position',
      withStore(async (store) => {
        await assert.rejects(store.put('tool', 'bad', '{\n  "name": "x",\n  "n": }'), (error: unknown) => {
          assert.ok(error instanceof ToolbusError);
          assert.equal(error.code, 'invalid-config');
          assert.match(error.message, /'tool\/bad'/);
          assert.match(error.message, /line 3, column 8 \(position 24\)/);
          return true;
        });
        assert.equal(await store.get('tool', 'bad'), undefined);
      }),
    );

    test(
      'a bad type or key rejects with invalid-config naming it',
      withStore(async (store) => {
        await assert.rejects(store.put('to ol', 'x', '{}'), {
          code: 'invalid-config',
          message: /type 'to ol'/,
        });
        await assert.rejects(store.put('tool', '', '{}'), { code: 'invalid-config', message: /key ''/ });
        await assert.rejects(store.get('tool', 'a/b'), { code: 'invalid-config' });
      }),
    );

    test(
      'conditional put succeeds only at the expected revision (0 = must not exist)',
      withStore(async (store) => {
        const r1 = await store.put('tool', 'c', '1', { ifRevision: 0 });
        await assert.rejects(store.put('tool', 'c', '2', { ifRevision: 0 }), (e: unknown) => {
          assert.ok(e instanceof ToolbusError);
          assert.equal(e.code, 'config-conflict');
          assert.match(e.message, /'tool\/c' is at revision/);
          return true;
        });
        const r2 = await store.put('tool', 'c', '2', { ifRevision: r1 });
        await assert.rejects(store.put('tool', 'c', '3', { ifRevision: r1 }), { code: 'config-conflict' });
        await assert.rejects(store.delete('tool', 'c', { ifRevision: r1 }), { code: 'config-conflict' });
        assert.equal(await store.delete('tool', 'c', { ifRevision: r2 }), true);
        assert.equal((await store.get('tool', 'c'))?.value, undefined);
      }),
    );

    test(
      'concurrent conditional writers: exactly one wins each round, no update is lost',
      withStore(async (store) => {
        await store.put('counter', 'n', '0');
        const writers = 4;
        const increments = 10;
        const worker = async (): Promise<number> => {
          let conflicts = 0;
          for (let done = 0; done < increments;) {
            const item = await store.get('counter', 'n');
            assert.ok(item);
            try {
              await store.put('counter', 'n', JSON.stringify((item.value as number) + 1), {
                ifRevision: item.revision,
              });
              done++;
            } catch (e) {
              assert.equal((e as ToolbusError).code, 'config-conflict');
              conflicts++;
              if (conflicts > 10_000) throw new Error('livelock');
            }
          }
          return conflicts;
        };
        await Promise.all(Array.from({ length: writers }, worker));
        assert.equal((await store.get('counter', 'n'))?.value, writers * increments);
      }),
    );

    test(
      'watch sees puts and deletes in revision order, with values',
      withStore(async (store) => {
        const watch = store.watch();
        const seen = takeChanges(watch, 3, waitMs);
        await new Promise((r) => setTimeout(r, 20));
        const r1 = await store.put('tool', 'w', '{"v":1}');
        const r2 = await store.put('tool-service', 's', '{"v":2}');
        const r3 = await store.delete('tool', 'w').then(() => store.revision());
        const changes = await seen;
        assert.deepEqual(changes, [
          { kind: 'put', type: 'tool', key: 'w', value: { v: 1 }, revision: r1 },
          { kind: 'put', type: 'tool-service', key: 's', value: { v: 2 }, revision: r2 },
          { kind: 'delete', type: 'tool', key: 'w', revision: r3 },
        ]);
      }),
    );

    test(
      'watch with includeExisting first yields every existing item',
      withStore(async (store) => {
        await store.put('tool', 'a', '1');
        await store.put('tool', 'b', '2');
        const watch = store.watch({ includeExisting: true });
        const first = await takeChanges(watch, 2, waitMs);
        assert.deepEqual(
          first.map((c) => [c.kind, c.key, c.value]),
          [
            ['put', 'a', 1],
            ['put', 'b', 2],
          ],
        );
        const next = takeChanges(watch, 1, waitMs);
        await store.put('tool', 'c', '3');
        assert.equal((await next)[0]?.key, 'c');
      }),
    );

    test(
      'watch with includeExisting yields existing items in revision order, not key order',
      withStore(async (store) => {
        // A consumer replaying changes expects them oldest first, as the live changes that follow.
        const rb = await store.put('tool', 'b', '1');
        const rs = await store.put('tool-service', 'a', '2');
        const ra = await store.put('tool', 'a', '3');
        const rb2 = await store.put('tool', 'b', '4');
        const first = await takeChanges(store.watch({ includeExisting: true }), 3, waitMs);
        assert.ok(rb < rs && rs < ra && ra < rb2);
        assert.deepEqual(
          first.map((c) => [c.type, c.key, c.value, c.revision]),
          [
            ['tool-service', 'a', 2, rs],
            ['tool', 'a', 3, ra],
            ['tool', 'b', 4, rb2],
          ],
        );
      }),
    );

    test(
      'leaving a for-await ends the watch; a second iteration throws; the signal ends it',
      withStore(async (store) => {
        const watch = store.watch();
        setTimeout(() => void store.put('tool', 'x', '1'), 20);
        for await (const change of watch) {
          assert.equal(change.key, 'x');
          break;
        }
        assert.throws(() => watch[Symbol.asyncIterator](), /one consumer/);
        const controller = new AbortController();
        const watch2 = store.watch({ signal: controller.signal });
        setTimeout(() => controller.abort(), 20);
        const rest = [];
        for await (const change of watch2) rest.push(change);
        assert.deepEqual(rest, []);
      }),
    );

    test(
      'close ends watches, is idempotent, and later calls reject with closed',
      withStore(async (store) => {
        const watch = store.watch();
        const ended = (async () => {
          for await (const _ of watch) {
            /* drain */
          }
          return 'ended';
        })();
        await store.close();
        await store.close();
        assert.equal(await ended, 'ended');
        await assert.rejects(store.get('tool', 'x'), { code: 'closed' });
        await assert.rejects(store.put('tool', 'x', '1'), { code: 'closed' });
      }),
    );
  });
}
