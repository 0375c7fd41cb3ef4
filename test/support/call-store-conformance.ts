/**
 * @module A reusable conformance suite for `CallStore` backends: every backend must pass it, so a
 * durable call behaves the same on memory, SQLite and NATS key-value.
 *
 * @example
 * ```ts
 * runCallStoreConformance('MemoryCallStore', () => new MemoryCallStore());
 * runCallStoreConformance('NatsKvCallStore', async () => new NatsKvCallStore(await connectNats({ servers })));
 * ```
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { CallRecord, CallStatus, CallStore, StoredCall } from '../../src/bus/index.js';

/** How long a test waits for a watch to yield (or end) before failing. */
const WAIT_MS = 5_000;

/** A record of `id` with every required field, and `overrides` on top. */
export function callRecord(id: string, overrides: Partial<CallRecord> = {}): CallRecord {
  return {
    id,
    service: 'request:tg:joke',
    status: 'queued',
    attempt: 0,
    idempotencyKey: id,
    chunks: [],
    chunkCount: 0,
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    ...overrides,
  };
}

/** The next result of a watch, failing after `waitMs` (a bound, not a timing claim). */
export async function nextWithin<T>(
  iterator: AsyncIterator<T>,
  what: string,
  waitMs = WAIT_MS,
): Promise<IteratorResult<T>> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not within ${waitMs} ms: ${what}`)), waitMs);
  });
  try {
    return await Promise.race([iterator.next(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The next record a watch yields; fails when the watch ends instead. */
export async function nextCall(
  iterator: AsyncIterator<StoredCall>,
  what: string,
  waitMs = WAIT_MS,
): Promise<StoredCall> {
  const result = await nextWithin(iterator, what, waitMs);
  assert.equal(result.done, false, `the watch ended instead of yielding ${what}`);
  return result.value as StoredCall;
}

/** Asserts that the watch ends (without error) within `waitMs`. */
export async function assertEnds(
  iterator: AsyncIterator<StoredCall>,
  what: string,
  waitMs = WAIT_MS,
): Promise<void> {
  const result = await nextWithin(iterator, what, waitMs);
  assert.equal(result.done, true, `${what}: the watch yielded ${JSON.stringify(result.value)}`);
}

/**
 * Registers a `describe` block of tests that any `CallStore` must pass. `make` gets a fresh, empty store
 * per call; the suite closes every store it makes.
 */
export function runCallStoreConformance(name: string, make: () => Promise<CallStore> | CallStore): void {
  describe(`CallStore conformance: ${name}`, () => {
    const withStore =
      (fn: (store: CallStore) => Promise<void>) => async (t: { after: (f: () => unknown) => void }) => {
        const store = await make();
        t.after(() => store.close());
        await fn(store);
      };

    test(
      'ttlMs is a positive number',
      withStore(async (store) => {
        assert.equal(typeof store.ttlMs, 'number');
        assert.ok(store.ttlMs > 0);
      }),
    );

    test(
      'get of an unknown id resolves undefined',
      withStore(async (store) => {
        assert.equal(await store.get('no-such-call'), undefined);
      }),
    );

    test(
      'put with revision 0 creates; a second put with 0 resolves undefined and changes nothing',
      withStore(async (store) => {
        const first = callRecord('c-create');
        const revision = await store.put(first, 0);
        assert.equal(typeof revision, 'number');
        assert.ok(revision! > 0);
        assert.equal(
          await store.put(callRecord('c-create', { status: 'running', attempt: 1 }), 0),
          undefined,
        );
        assert.deepEqual(await store.get('c-create'), { record: first, revision });
      }),
    );

    test(
      'put at the current revision succeeds with a higher one; a stale revision resolves undefined',
      withStore(async (store) => {
        const r1 = await store.put(callRecord('c-update'), 0);
        assert.ok(r1 !== undefined);
        const running = callRecord('c-update', { status: 'running', attempt: 1 });
        const r2 = await store.put(running, r1);
        assert.ok(r2 !== undefined && r2 > r1, `${r2} > ${r1}`);
        assert.equal(await store.put(callRecord('c-update', { status: 'failed' }), r1), undefined);
        assert.equal(await store.put(callRecord('c-update', { status: 'failed' }), r2 + 1000), undefined);
        assert.deepEqual(await store.get('c-update'), { record: running, revision: r2 });
        // A record that does not exist matches no revision but 0.
        assert.equal(await store.put(callRecord('c-absent'), r2), undefined);
        assert.equal(await store.get('c-absent'), undefined);
      }),
    );

    test(
      'revisions grow across records of the store',
      withStore(async (store) => {
        const a = await store.put(callRecord('c-rev-a'), 0);
        const b = await store.put(callRecord('c-rev-b'), 0);
        const a2 = await store.put(callRecord('c-rev-a', { attempt: 1 }), a!);
        assert.ok(a! < b! && b! < a2!, `${a} < ${b} < ${a2}`);
      }),
    );

    test(
      'concurrent writers at the same revision: exactly one wins',
      withStore(async (store) => {
        const r1 = await store.put(callRecord('c-race'), 0);
        const results = await Promise.all(
          [1, 2, 3, 4].map((attempt) => store.put(callRecord('c-race', { attempt }), r1!)),
        );
        const won = results.filter((r) => r !== undefined);
        assert.equal(won.length, 1, JSON.stringify(results));
        const stored = await store.get('c-race');
        assert.equal(stored?.revision, won[0]);
        assert.equal(stored?.record.attempt, results.indexOf(won[0]) + 1);
      }),
    );

    test(
      'get returns a copy equal to what was put, with every optional field',
      withStore(async (store) => {
        const full = callRecord('c-full', {
          tool: 'tell-joke',
          user: 'alice',
          status: 'completed',
          attempt: 2,
          idempotencyKey: 'key-1',
          chunks: [],
          chunkCount: 3,
          response: 'Why did the chicken… ünïcode ✓ "quoted"\n',
          cancelRequested: false,
          createdAt: 1_700_000_000_001,
          updatedAt: 1_700_000_000_999,
        });
        const failed = callRecord('c-error', {
          status: 'failed',
          chunks: ['a', 'b'],
          chunkCount: 2,
          error: { type: 'tool-error', message: 'it broke' },
          cancelRequested: true,
        });
        const rFull = await store.put(full, 0);
        const rFailed = await store.put(failed, 0);
        const expected = structuredClone(full);
        full.chunks.push('changed after put');
        assert.deepEqual(await store.get('c-full'), { record: expected, revision: rFull });
        assert.deepEqual(await store.get('c-error'), { record: failed, revision: rFailed });
        const copy = await store.get('c-error');
        copy!.record.chunks.push('changed by a reader');
        copy!.record.error!.message = 'changed by a reader';
        assert.deepEqual((await store.get('c-error'))?.record, failed);
      }),
    );

    test(
      'claim: the first claim wins; another id gets the holder; other services and keys are independent',
      withStore(async (store) => {
        assert.equal(await store.claim('request:tg:joke', 'key-1', 'call-a'), 'call-a');
        assert.equal(await store.claim('request:tg:joke', 'key-1', 'call-b'), 'call-a');
        assert.equal(await store.claim('request:tg:joke', 'key-1', 'call-a'), 'call-a');
        assert.equal(await store.claim('request:tg:other', 'key-1', 'call-c'), 'call-c');
        assert.equal(await store.claim('request:tg:joke', 'key-2', 'call-d'), 'call-d');
        assert.equal(await store.claim('request:tg:joke', 'key-1', 'call-e'), 'call-a');
      }),
    );

    test(
      'concurrent claims of one key: all get the same winner',
      withStore(async (store) => {
        const ids = ['x1', 'x2', 'x3', 'x4'];
        const holders = await Promise.all(ids.map((id) => store.claim('request:tg:joke', 'same', id)));
        assert.ok(ids.includes(holders[0]!));
        assert.deepEqual(new Set(holders).size, 1, JSON.stringify(holders));
      }),
    );

    for (const final of ['completed', 'failed', 'cancelled'] satisfies CallStatus[]) {
      test(
        `watch yields the current record, then each later put, and ends after '${final}'`,
        withStore(async (store) => {
          const id = `c-watch-${final}`;
          const r1 = await store.put(callRecord(id), 0);
          const controller = new AbortController();
          const watch = store.watch(id, controller.signal)[Symbol.asyncIterator]();
          try {
            assert.deepEqual(await nextCall(watch, 'the current record'), {
              record: callRecord(id),
              revision: r1,
            });
            const running = callRecord(id, { status: 'running', attempt: 1 });
            const r2 = await store.put(running, r1!);
            assert.deepEqual(await nextCall(watch, 'running'), { record: running, revision: r2 });
            const chunk = callRecord(id, { status: 'running', attempt: 1, chunks: ['he'], chunkCount: 1 });
            const r3 = await store.put(chunk, r2!);
            assert.deepEqual(await nextCall(watch, 'a chunk'), { record: chunk, revision: r3 });
            const done = callRecord(id, { status: final, attempt: 1, chunkCount: 1 });
            const r4 = await store.put(done, r3!);
            assert.deepEqual(await nextCall(watch, final), { record: done, revision: r4 });
            await assertEnds(watch, `after '${final}'`);
          } finally {
            controller.abort();
          }
        }),
      );
    }

    test(
      'watch of a final record yields it once and ends',
      withStore(async (store) => {
        const done = callRecord('c-final', { status: 'completed', response: 'ok' });
        const revision = await store.put(done, 0);
        const controller = new AbortController();
        const seen: StoredCall[] = [];
        try {
          for await (const stored of store.watch('c-final', controller.signal)) seen.push(stored);
        } finally {
          controller.abort();
        }
        assert.deepEqual(seen, [{ record: done, revision }]);
      }),
    );

    test(
      'watch of an id that does not exist yet yields it once it is put',
      withStore(async (store) => {
        const controller = new AbortController();
        const watch = store.watch('c-later', controller.signal)[Symbol.asyncIterator]();
        try {
          const first = nextCall(watch, 'the record once put');
          await new Promise((resolve) => setTimeout(resolve, 50));
          const record = callRecord('c-later');
          const revision = await store.put(record, 0);
          assert.deepEqual(await first, { record, revision });
          const done = callRecord('c-later', { status: 'cancelled', cancelRequested: true });
          const r2 = await store.put(done, revision!);
          assert.deepEqual(await nextCall(watch, 'cancelled'), { record: done, revision: r2 });
          await assertEnds(watch, 'after cancelled');
        } finally {
          controller.abort();
        }
      }),
    );

    test(
      'watch ends without error when the signal aborts, also while waiting and before it starts',
      withStore(async (store) => {
        const revision = await store.put(callRecord('c-abort'), 0);
        const controller = new AbortController();
        const watch = store.watch('c-abort', controller.signal)[Symbol.asyncIterator]();
        assert.equal((await nextCall(watch, 'the current record')).revision, revision);
        const pending = nextWithin(watch, 'the end after abort');
        await new Promise((resolve) => setTimeout(resolve, 20));
        controller.abort();
        assert.equal((await pending).done, true);

        // A watch of a missing id, aborted while it waits for the record to appear.
        const waiting = new AbortController();
        const missing = store.watch('c-never', waiting.signal)[Symbol.asyncIterator]();
        const ended = nextWithin(missing, 'the end after abort');
        setTimeout(() => waiting.abort(), 20);
        assert.equal((await ended).done, true);

        const aborted = AbortSignal.abort();
        const seen: StoredCall[] = [];
        for await (const stored of store.watch('c-abort', aborted)) seen.push(stored);
        assert.deepEqual(seen, []);
      }),
    );

    test(
      'leaving a for-await ends the watch; the store keeps working',
      withStore(async (store) => {
        const r1 = await store.put(callRecord('c-break'), 0);
        const controller = new AbortController();
        for await (const stored of store.watch('c-break', controller.signal)) {
          assert.equal(stored.revision, r1);
          break;
        }
        const r2 = await store.put(callRecord('c-break', { status: 'running' }), r1!);
        assert.equal((await store.get('c-break'))?.revision, r2);
      }),
    );

    test(
      'two watchers of the same id both see every change',
      withStore(async (store) => {
        const r1 = await store.put(callRecord('c-two'), 0);
        const controller = new AbortController();
        const a = store.watch('c-two', controller.signal)[Symbol.asyncIterator]();
        const b = store.watch('c-two', controller.signal)[Symbol.asyncIterator]();
        try {
          assert.equal((await nextCall(a, 'a: current')).revision, r1);
          assert.equal((await nextCall(b, 'b: current')).revision, r1);
          const running = callRecord('c-two', { status: 'running', attempt: 1 });
          const r2 = await store.put(running, r1!);
          assert.deepEqual(await nextCall(a, 'a: running'), { record: running, revision: r2 });
          assert.deepEqual(await nextCall(b, 'b: running'), { record: running, revision: r2 });
          const done = callRecord('c-two', { status: 'completed', response: 'ok' });
          const r3 = await store.put(done, r2!);
          assert.deepEqual(await nextCall(a, 'a: completed'), { record: done, revision: r3 });
          assert.deepEqual(await nextCall(b, 'b: completed'), { record: done, revision: r3 });
          await assertEnds(a, 'a: after completed');
          await assertEnds(b, 'b: after completed');
        } finally {
          controller.abort();
        }
      }),
    );

    test(
      "a watch sees only its own id's changes",
      withStore(async (store) => {
        const controller = new AbortController();
        const watch = store.watch('c-mine', controller.signal)[Symbol.asyncIterator]();
        try {
          const first = nextCall(watch, 'the own record');
          await store.put(callRecord('c-not-mine'), 0);
          const mine = await store.put(callRecord('c-mine'), 0);
          assert.equal((await first).record.id, 'c-mine');
          assert.equal((await first).revision, mine);
        } finally {
          controller.abort();
        }
      }),
    );

    test(
      'records and claims with awkward ids round-trip',
      withStore(async (store) => {
        const ids = [
          'a.b.c',
          'tg:joke:1',
          'a/b/c',
          'with spaces in it',
          'ünïcødé-✓-日本語-🙂',
          '=3D=2E',
          '*>',
          '.leading.and.trailing.',
          'x'.repeat(200),
          `${'é'.repeat(99)}.🙂`,
        ];
        for (const id of ids) {
          const record = callRecord(id, { idempotencyKey: `key ${id}`, service: `request:${id}` });
          const revision = await store.put(record, 0);
          assert.ok(revision !== undefined, id);
          assert.deepEqual(await store.get(id), { record, revision }, id);
          assert.equal(await store.claim(`request:${id}`, `key ${id}`, id), id);
          assert.equal(await store.claim(`request:${id}`, `key ${id}`, 'other'), id);
        }
        // Distinct ids stay distinct (no escaping collapses two into one).
        for (const id of ids) assert.equal((await store.get(id))?.record.id, id);
        assert.equal(await store.get('a_b_c'), undefined);
        assert.equal(await store.get('a.b'), undefined);
      }),
    );

    test('close is idempotent', async () => {
      const store = await make();
      try {
        await store.put(callRecord('c-close'), 0);
      } finally {
        await store.close();
        await store.close();
      }
    });
  });
}
