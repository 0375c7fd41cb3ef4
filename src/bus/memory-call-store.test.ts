import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callRecord, runCallStoreConformance } from '../../test/support/call-store-conformance.js';
import { DEFAULT_CALL_RESULT_TTL_MS, MemoryCallStore } from './memory-call-store.js';

runCallStoreConformance('MemoryCallStore', () => new MemoryCallStore());

test('MemoryCallStore keeps records ttlMs after their last write, 24 h by default', async (t) => {
  assert.equal(new MemoryCallStore().ttlMs, DEFAULT_CALL_RESULT_TTL_MS);
  let now = 1_000_000;
  const store = new MemoryCallStore({ ttlMs: 10_000, now: () => now });
  t.after(() => store.close());
  assert.equal(store.ttlMs, 10_000);
  const r1 = await store.put(callRecord('c-ttl'), 0);
  assert.equal(await store.claim('request:tg:joke', 'key', 'c-ttl'), 'c-ttl');
  now += 9_999;
  assert.equal((await store.get('c-ttl'))?.revision, r1);
  // A write restarts the record's time; the claim keeps its own.
  const r2 = await store.put(callRecord('c-ttl', { status: 'running' }), r1!);
  now += 1;
  assert.equal(await store.claim('request:tg:joke', 'key', 'other'), 'other', 'the claim expired');
  now += 9_998;
  assert.equal((await store.get('c-ttl'))?.revision, r2);
  now += 1;
  assert.equal(await store.get('c-ttl'), undefined, 'gone at ttl after the last write');
  // An expired record counts as absent: only revision 0 creates it again.
  assert.equal(await store.put(callRecord('c-ttl'), r2!), undefined);
  assert.ok((await store.put(callRecord('c-ttl'), 0))! > r2!);
});

test('MemoryCallStore refuses a bad ttlMs', () => {
  for (const ttlMs of [0, -1, Number.NaN]) {
    assert.throws(() => new MemoryCallStore({ ttlMs }), { code: 'usage' }, String(ttlMs));
  }
});
