import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ToolbusError } from '../../errors/index.js';
import { takeChanges } from '../../../test/support/config-store-conformance.js';
import { SqliteConfigStore } from './sqlite-config-store.js';

test('SqliteConfigStore refuses a bad busyTimeoutMs as usage, not as a file that failed to open', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'toolbus-sqlite-options-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'config.db');
  for (const busyTimeoutMs of [-1, Number.NaN, 1.5, 2 ** 31, '100' as unknown as number]) {
    assert.throws(
      () => new SqliteConfigStore({ path, busyTimeoutMs }),
      (error: unknown) =>
        error instanceof ToolbusError && error.code === 'usage' && error.message.includes("'busyTimeoutMs'"),
      String(busyTimeoutMs),
    );
  }
  assert.equal(existsSync(path), false, 'nothing is created for a refused option');
  // 0 is valid: fail at once on another writer's lock.
  const store = new SqliteConfigStore({ path, busyTimeoutMs: 0 });
  await store.put('tool', 'a', { x: 1 });
  await store.close();
});

/** Waits until `done()` holds, checking every few ms; fails after `waitMs` (a bound, not a timing claim). */
async function until(done: () => boolean, what: string, waitMs = 10_000): Promise<void> {
  const deadline = Date.now() + waitMs;
  while (!done()) {
    if (Date.now() > deadline) assert.fail(`not within ${waitMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test('a watcher reads the change table only when another connection committed (PRAGMA data_version)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'toolbus-sqlite-poll-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'config.db');
  const store = new SqliteConfigStore({ path, pollMs: 5, fileEvents: false });
  const other = new SqliteConfigStore({ path });
  t.after(async () => {
    await store.close();
    await other.close();
  });
  const watch = store.watch();
  const checksNow = (): number => store.watchStats.checks;
  await until(() => checksNow() >= 2, 'the first checks');
  const reads = store.watchStats.reads;
  const checks = checksNow();
  await until(() => checksNow() >= checks + 5, 'five more checks');
  assert.equal(store.watchStats.reads, reads, 'nothing was committed: no check read the change table');
  assert.equal(store.watchStats.listening, false, 'fileEvents: false listens to no file events');

  // This store's own write reaches the watcher at once and moves no check to read.
  await store.put('tool', 'own', { v: 1 });
  assert.deepEqual(
    (await takeChanges(watch, 1)).map((c) => c.key),
    ['own'],
  );
  const afterOwn = checksNow();
  await until(() => checksNow() >= afterOwn + 3, 'three checks after its own write');
  assert.equal(store.watchStats.reads, reads);

  // Another connection's commit moves data_version: the poll reads it.
  await other.put('tool', 'theirs', { v: 2 });
  assert.deepEqual(
    (await takeChanges(watch, 1)).map((c) => c.key),
    ['theirs'],
  );
  assert.ok(store.watchStats.reads > reads);
});

test("another connection's write wakes a watcher through file events, with no poll due for minutes", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'toolbus-sqlite-events-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'config.db');
  const store = new SqliteConfigStore({ path, pollMs: 600_000 });
  const other = new SqliteConfigStore({ path });
  t.after(async () => {
    await store.close();
    await other.close();
  });
  const watch = store.watch();
  if (!store.watchStats.listening) {
    t.skip('no file events for this directory here; the poll alone finds changes');
    return;
  }
  for (let i = 0; i < 3; i++) await other.put('tool', `k${i}`, { i });
  assert.deepEqual(
    (await takeChanges(watch, 3, 10_000)).map((c) => c.key),
    ['k0', 'k1', 'k2'],
  );
  assert.ok(store.watchStats.fileEvents > 0);
});

test('the file watcher lives only while someone watches, and closes with the store', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'toolbus-sqlite-listen-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const store = new SqliteConfigStore({ path: join(dir, 'config.db') });
  t.after(() => store.close());
  assert.equal(store.watchStats.listening, false, 'no watch, no file watcher');
  const first = store.watch()[Symbol.asyncIterator]();
  const listening = store.watchStats.listening;
  if (!listening) {
    t.skip('no file events for this directory here');
    return;
  }
  await first.return?.();
  assert.equal(store.watchStats.listening, false, 'the last watch ended: the file watcher is closed');
  store.watch();
  assert.equal(store.watchStats.listening, true);
  await store.close();
  assert.equal(store.watchStats.listening, false, 'closing the store closes the file watcher');
});
