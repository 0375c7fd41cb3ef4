import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import { ToolbusError } from '../../src/errors/index.js';
import { SqliteConfigStore, defaultConfigPath } from '../../src/config/sqlite/index.js';
import { runConfigStoreConformance, takeChanges } from '../support/config-store-conformance.js';

const root = mkdtempSync(join(tmpdir(), 'toolbus-sqlite-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshPath = (): string => join(root, `db-${n++}`, 'config.db');

runConfigStoreConformance(
  'SqliteConfigStore',
  () => new SqliteConfigStore({ path: freshPath(), pollMs: 25 }),
);

const tsx = ['--import', 'tsx'];
function startChild(script: string, args: string[]) {
  const child = spawn(
    process.execPath,
    [...tsx, new URL(`../fixtures/${script}`, import.meta.url).pathname, ...args],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const lines = createInterface({ input: child.stdout });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, lines, exited, stderr: () => stderr };
}

describe('SqliteConfigStore file', () => {
  test('defaults to $TOOLBUS_HOME/config.db, else ./.toolbus/config.db', () => {
    assert.equal(defaultConfigPath({ env: { TOOLBUS_HOME: '/srv/tb' } }), '/srv/tb/config.db');
    assert.equal(defaultConfigPath({ env: {} }), join(process.cwd(), '.toolbus', 'config.db'));
    assert.equal(defaultConfigPath({ home: '/h', env: { TOOLBUS_HOME: '/x' } }), '/h/config.db');
    const store = new SqliteConfigStore({ home: join(root, 'home') });
    assert.equal(store.path, join(root, 'home', 'config.db'));
    return store.close();
  });

  test('pollMs that is not a positive number of ms is refused with usage naming the option', () => {
    // 0 or a negative value would poll the file about every millisecond, burning a core.
    for (const pollMs of [0, -5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31]) {
      assert.throws(
        () => new SqliteConfigStore({ path: freshPath(), pollMs }),
        (error: unknown) =>
          error instanceof ToolbusError &&
          error.code === 'usage' &&
          /'pollMs' must be a positive number/.test(error.message) &&
          error.message.includes(String(pollMs)),
        `pollMs ${pollMs}`,
      );
    }
    const store = new SqliteConfigStore({ path: freshPath(), pollMs: 1 });
    void store.close();
  });

  test('data persists across re-open, with revisions', async () => {
    const path = freshPath();
    const a = new SqliteConfigStore({ path });
    const rev = await a.put('tool', 'x', '{"a":1}');
    await a.close();
    const b = new SqliteConfigStore({ path });
    assert.deepEqual(await b.get('tool', 'x'), { type: 'tool', key: 'x', value: { a: 1 }, revision: rev });
    assert.equal(await b.revision(), rev);
    await b.close();
  });

  test('a corrupt file gives store-error naming the path and what to do', () => {
    const path = join(root, 'corrupt.db');
    writeFileSync(path, 'this is not a database, just some text that is long enough '.repeat(40));
    assert.throws(
      () => new SqliteConfigStore({ path }),
      (e: unknown) => {
        assert.ok(e instanceof ToolbusError);
        assert.equal(e.code, 'store-error');
        assert.ok(e.message.includes(path), e.message);
        assert.match(e.message, /not a SQLite database or is corrupt/);
        assert.match(e.message, /Move it aside/);
        return true;
      },
    );
  });

  test('an unwritable location gives store-error naming the path and what to do', () => {
    const blocker = join(root, 'a-file');
    writeFileSync(blocker, 'x');
    const path = join(blocker, 'config.db'); // its "directory" is a file: nothing can be created there
    assert.throws(
      () => new SqliteConfigStore({ path }),
      (e: unknown) => {
        assert.ok(e instanceof ToolbusError);
        assert.equal(e.code, 'store-error');
        assert.ok(e.message.includes(path), e.message);
        assert.match(e.message, /writable/);
        return true;
      },
    );
    const dir = join(root, 'a-dir');
    mkdirSync(dir);
    assert.throws(() => new SqliteConfigStore({ path: dir }), {
      code: 'store-error',
      message: /is a directory/,
    });
  });

  test('a read-only file can be read; a write says the file is read-only', async (t) => {
    const path = freshPath();
    const writer = new SqliteConfigStore({ path });
    await writer.put('tool', 'a', '{"v":1}');
    await writer.close();
    // root ignores file modes; the immutable attribute stops root too.
    const asRoot = process.getuid?.() === 0;
    try {
      if (asRoot) execFileSync('chattr', ['+i', path], { stdio: 'ignore' });
      else chmodSync(path, 0o444);
    } catch {
      t.skip('cannot make a file read-only here (no chattr)');
      return;
    }
    t.after(() => {
      if (asRoot) execFileSync('chattr', ['-i', path], { stdio: 'ignore' });
      else chmodSync(path, 0o644);
    });
    const store = new SqliteConfigStore({ path });
    t.after(() => store.close());
    assert.deepEqual(await store.get('tool', 'a'), { type: 'tool', key: 'a', value: { v: 1 }, revision: 1 });
    assert.equal((await store.list()).length, 1);
    await assert.rejects(store.put('tool', 'b', '{}'), (e: ToolbusError) => {
      assert.equal(e.code, 'store-error');
      assert.ok(e.message.includes(path), e.message);
      assert.match(e.message, /is read-only and cannot be written/);
      return true;
    });
  });

  test('a value that is not JSON, written around toolbus, is a store-error naming the item and the fix', async (t) => {
    const path = freshPath();
    const store = new SqliteConfigStore({ path });
    t.after(() => store.close());
    await store.put('tool', 'a', '{"v":1}');
    const raw = new Database(path);
    raw.prepare("UPDATE items SET value = '{v:1}' WHERE key = 'a'").run();
    raw.close();
    const expected = /config item 'tool\/a': invalid JSON at line 1, column 2.*toolbus config put tool\/a/;
    await assert.rejects(store.list(), { code: 'store-error', message: expected });
    await assert.rejects(store.get('tool', 'a'), { code: 'store-error', message: expected });
  });

  test('two stores on one file: conditional puts from both, no lost update', async () => {
    const path = freshPath();
    const a = new SqliteConfigStore({ path });
    const b = new SqliteConfigStore({ path });
    try {
      await a.put('counter', 'n', '0');
      const bump = async (store: SqliteConfigStore) => {
        for (let done = 0; done < 20;) {
          const item = (await store.get('counter', 'n'))!;
          await store
            .put('counter', 'n', String((item.value as number) + 1), { ifRevision: item.revision })
            .then(
              () => done++,
              (e: ToolbusError) => assert.equal(e.code, 'config-conflict'),
            );
          await new Promise((r) => setImmediate(r));
        }
      };
      await Promise.all([bump(a), bump(b), bump(a), bump(b)]);
      assert.equal((await b.get('counter', 'n'))?.value, 80);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a file replaced or deleted while open is reopened: watchers fail (watch again), reads see the new file', async (t) => {
    const path = freshPath();
    const store = new SqliteConfigStore({ path, pollMs: 10 });
    t.after(() => store.close());
    await store.put('tool', 'old', '{"v":1}');
    const watch = store.watch()[Symbol.asyncIterator]();
    // Another program moves the file aside (as the corrupt-file advice says) and a new one is written.
    for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
    const other = new SqliteConfigStore({ path });
    await other.put('tool', 'new', '{"v":2}');
    await other.close();
    await assert.rejects(watch.next(), (error: ToolbusError) => {
      assert.equal(error.code, 'store-error');
      assert.match(error.message, /was replaced or deleted by another program; watch again/);
      return true;
    });
    assert.deepEqual(
      (await store.list()).map((i) => i.key),
      ['new'],
    );
    const again = store.watch();
    await store.put('tool', 'next', '{"v":3}');
    assert.deepEqual(
      (await takeChanges(again, 1, 5_000)).map((c) => c.key),
      ['next'],
    );
  });

  test('a deleted file is not made again by a watcher (only by the next read or write)', async (t) => {
    const path = freshPath();
    const store = new SqliteConfigStore({ path, pollMs: 10 });
    t.after(() => store.close());
    await store.put('tool', 'old', '{"v":1}');
    const watch = store.watch()[Symbol.asyncIterator]();
    for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
    await assert.rejects(watch.next(), (error: ToolbusError) => error.code === 'store-error');
    await new Promise((resolve) => setTimeout(resolve, 100)); // many checks' worth
    assert.equal(existsSync(path), false, 'the watcher made the file again');
    await store.put('tool', 'fresh', '{"v":2}');
    assert.equal(existsSync(path), true);
    assert.deepEqual(
      (await store.list()).map((i) => i.key),
      ['fresh'],
    );
  });

  test('a watcher in another process sees changes written here', async (t) => {
    const path = freshPath();
    const store = new SqliteConfigStore({ path });
    t.after(() => store.close());
    await store.revision(); // create the file before the child opens it
    const child = startChild('config-watch-child.ts', [path]);
    t.after(() => child.child.kill('SIGKILL'));
    const it = child.lines[Symbol.asyncIterator]();
    assert.equal((await it.next()).value, 'ready', child.stderr());
    await store.put('tool', 'a', '{"v":1}');
    await store.delete('tool', 'a');
    await store.put('tool', 'stop', 'true');
    const got = [];
    for (let i = 0; i < 3; i++)
      got.push(JSON.parse((await it.next()).value as string) as { kind: string; key: string });
    assert.deepEqual(
      got.map((c) => `${c.kind} ${c.key}`),
      ['put a', 'delete a', 'put stop'],
    );
    assert.equal(await child.exited, 0);
  });

  test('this process watches changes written by another process', async (t) => {
    const path = freshPath();
    const store = new SqliteConfigStore({ path, pollMs: 25 });
    t.after(() => store.close());
    const watch = store.watch();
    const child = startChild('config-put-stream.ts', [path, '3']);
    t.after(() => child.child.kill('SIGKILL'));
    const changes = await takeChanges(watch, 3, 10_000);
    assert.deepEqual(
      changes.map((c) => c.key),
      ['item-0', 'item-1', 'item-2'],
    );
    assert.deepEqual(changes[1]?.value, { i: 1, payload: 'x'.repeat(64) });
    assert.equal(await child.exited, 0, child.stderr());
  });

  test("another process's writes wake this process's watcher through file events, with no poll due", async (t) => {
    const path = freshPath();
    const store = new SqliteConfigStore({ path, pollMs: 600_000 });
    t.after(() => store.close());
    const watch = store.watch();
    if (!store.watchStats.listening) {
      t.skip('no file events for this directory here; the poll alone finds changes');
      return;
    }
    const child = startChild('config-put-stream.ts', [path, '3']);
    t.after(() => child.child.kill('SIGKILL'));
    const changes = await takeChanges(watch, 3, 10_000);
    assert.deepEqual(
      changes.map((c) => c.key),
      ['item-0', 'item-1', 'item-2'],
    );
    assert.ok(store.watchStats.fileEvents > 0);
    assert.equal(await child.exited, 0, child.stderr());
  });

  test('kill -9 in the middle of a stream of puts: every acknowledged put survives', async () => {
    const path = freshPath();
    const child = startChild('config-put-stream.ts', [path]);
    const acknowledged: string[] = [];
    for await (const line of child.lines) {
      acknowledged.push(line);
      if (acknowledged.length === 200) child.child.kill('SIGKILL');
      if (acknowledged.length > 100_000) break; // bound: never loop forever
    }
    await child.exited;
    assert.equal(child.child.signalCode, 'SIGKILL');
    assert.ok(acknowledged.length >= 200);
    const store = new SqliteConfigStore({ path });
    try {
      const keys = new Set((await store.list('stream')).map((i) => i.key));
      const missing = acknowledged.filter((k) => !keys.has(k));
      assert.deepEqual(missing, []);
      // and the store still works after the crash
      await store.put('stream', 'after-crash', '1');
      assert.equal((await store.get('stream', 'after-crash'))?.value, 1);
    } finally {
      await store.close();
    }
  });
});
