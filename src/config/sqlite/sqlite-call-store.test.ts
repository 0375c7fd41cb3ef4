import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import {
  assertEnds,
  callRecord,
  nextCall,
  runCallStoreConformance,
} from '../../../test/support/call-store-conformance.js';
import { SqliteCallStore } from './index.js';

let dir: string;
let files = 0;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolbus-sqlite-calls-'));
});
after(() => rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }));

/** A fresh file in the test folder. */
const freshPath = (): string => join(dir, `calls-${++files}.db`);

runCallStoreConformance('SqliteCallStore', () => new SqliteCallStore({ path: freshPath() }));

describe('SqliteCallStore on one file', () => {
  test('two stores on the same file see each other’s puts and claims', async (t) => {
    const path = freshPath();
    const a = new SqliteCallStore({ path });
    const b = new SqliteCallStore({ path });
    t.after(() => Promise.all([a.close(), b.close()]));
    const r1 = await a.put(callRecord('c-shared'), 0);
    assert.deepEqual(await b.get('c-shared'), { record: callRecord('c-shared'), revision: r1 });
    assert.equal(await b.put(callRecord('c-shared'), 0), undefined, 'b sees that it exists');
    const running = callRecord('c-shared', { status: 'running', attempt: 1 });
    const r2 = await b.put(running, r1!);
    assert.ok(r2! > r1!);
    assert.equal(await a.put(callRecord('c-shared', { status: 'failed' }), r1!), undefined, 'stale in a');
    assert.deepEqual(await a.get('c-shared'), { record: running, revision: r2 });
    // One revision counter for the file: a record first written by b continues after a's.
    const other = await b.put(callRecord('c-other'), 0);
    assert.ok(other! > r2!);
    assert.equal(await a.claim('request:tg:joke', 'key', 'from-a'), 'from-a');
    assert.equal(await b.claim('request:tg:joke', 'key', 'from-b'), 'from-a');
  });

  test('a watch in one store sees puts made through another', async (t) => {
    const path = freshPath();
    const a = new SqliteCallStore({ path, pollMs: 10 });
    const b = new SqliteCallStore({ path });
    t.after(() => Promise.all([a.close(), b.close()]));
    const controller = new AbortController();
    t.after(() => controller.abort());
    const watch = a.watch('c-cross', controller.signal)[Symbol.asyncIterator]();
    const first = nextCall(watch, 'the record put by b');
    await new Promise((resolve) => setTimeout(resolve, 30));
    const r1 = await b.put(callRecord('c-cross'), 0);
    assert.deepEqual(await first, { record: callRecord('c-cross'), revision: r1 });
    const done = callRecord('c-cross', { status: 'completed', response: 'ok' });
    const r2 = await b.put(done, r1!);
    assert.deepEqual(await nextCall(watch, 'completed, put by b'), { record: done, revision: r2 });
    await assertEnds(watch, 'after completed');
  });

  test('records and claims expire ttlMs after their last write (the clock is `now`)', async (t) => {
    let now = 5_000_000;
    const path = freshPath();
    const store = new SqliteCallStore({ path, ttlMs: 10_000, now: () => now });
    const other = new SqliteCallStore({ path, ttlMs: 10_000, now: () => now });
    t.after(() => Promise.all([store.close(), other.close()]));
    assert.equal(store.ttlMs, 10_000);
    const r1 = await store.put(callRecord('c-ttl'), 0);
    assert.equal(await store.claim('request:tg:joke', 'key', 'c-ttl'), 'c-ttl');
    now += 9_999;
    assert.equal((await other.get('c-ttl'))?.revision, r1);
    assert.equal(await other.claim('request:tg:joke', 'key', 'late'), 'c-ttl');
    const r2 = await store.put(callRecord('c-ttl', { status: 'running' }), r1!);
    now += 1;
    assert.equal(await other.claim('request:tg:joke', 'key', 'late'), 'late', 'the claim expired');
    assert.equal((await other.get('c-ttl'))?.revision, r2, 'the write restarted the record’s time');
    now += 9_999;
    assert.equal(await store.get('c-ttl'), undefined, 'gone at ttl after the last write');
    assert.equal(await other.get('c-ttl'), undefined);
    // An expired row counts as absent: only revision 0 writes it again, with a newer revision.
    assert.equal(await store.put(callRecord('c-ttl'), r2!), undefined);
    const r3 = await store.put(callRecord('c-ttl'), 0);
    assert.ok(r3! > r2!);
    // A prune (due a minute after the last) deletes expired rows from the file; live ones stay.
    const rows = (): string[] => {
      const db = new Database(path, { readonly: true });
      try {
        return (db.prepare('SELECT id FROM call_records ORDER BY id').all() as { id: string }[]).map(
          (row) => row.id,
        );
      } finally {
        db.close();
      }
    };
    await store.put(callRecord('c-old'), 0);
    assert.deepEqual(rows(), ['c-old', 'c-ttl']);
    now += 60_000;
    await store.put(callRecord('c-new'), 0);
    assert.deepEqual(rows(), ['c-new']);
  });

  test('the file survives reopening', async () => {
    const path = freshPath();
    const first = new SqliteCallStore({ path });
    const record = callRecord('c-kept', { status: 'completed', response: 'kept', tool: 'tell-joke' });
    const revision = await first.put(record, 0);
    assert.equal(await first.claim('request:tg:joke', 'kept', 'c-kept'), 'c-kept');
    await first.close();
    const again = new SqliteCallStore({ path });
    try {
      assert.deepEqual(await again.get('c-kept'), { record, revision });
      assert.equal(await again.claim('request:tg:joke', 'kept', 'other'), 'c-kept');
      assert.ok((await again.put(callRecord('c-next'), 0))! > revision!, 'the counter continues');
    } finally {
      await again.close();
    }
  });

  test('close ends an active watch, later calls reject with closed, and the poll timer stops', async () => {
    const store = new SqliteCallStore({ path: freshPath(), pollMs: 5 });
    await store.put(callRecord('c-close'), 0);
    const controller = new AbortController();
    const watch = store.watch('c-close', controller.signal)[Symbol.asyncIterator]();
    await nextCall(watch, 'the current record');
    const pending = watch.next();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await store.close();
    assert.equal((await pending).done, true);
    await assert.rejects(store.get('c-close'), { code: 'closed' });
    await assert.rejects(store.put(callRecord('c-close'), 0), { code: 'closed' });
    await assert.rejects(store.claim('s', 'k', 'i'), { code: 'closed' });
    await assert.rejects(store.watch('c-close', controller.signal)[Symbol.asyncIterator]().next(), {
      code: 'closed',
    });
  });

  test('a bad file or option fails with a message that names the file, not its folder', async () => {
    const notADb = join(dir, 'not-a-db.db');
    await writeFile(notADb, 'this is not a SQLite database, just text that is long enough '.repeat(20));
    assert.throws(
      () => new SqliteCallStore({ path: notADb }),
      (error: unknown) => {
        assert.equal((error as { code?: string }).code, 'store-error');
        const message = (error as Error).message;
        assert.match(message, /'not-a-db\.db'/);
        assert.ok(!message.includes(dir), message);
        return true;
      },
    );
    const folder = join(dir, 'a-folder.db');
    await mkdir(folder);
    assert.throws(
      () => new SqliteCallStore({ path: folder }),
      (error: unknown) => {
        assert.equal((error as { code?: string }).code, 'store-error');
        assert.match((error as Error).message, /'a-folder\.db' is a directory/);
        assert.ok(!(error as Error).message.includes(dir));
        return true;
      },
    );
    for (const options of [{ ttlMs: 0 }, { ttlMs: -1 }, { pollMs: 0 }, { pollMs: 2 ** 31 }]) {
      assert.throws(() => new SqliteCallStore({ path: freshPath(), ...options }), { code: 'usage' });
    }
  });
});
