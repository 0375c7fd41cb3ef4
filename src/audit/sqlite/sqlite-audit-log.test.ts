import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { FunctionTool, ToolSet } from '../../tools/index.js';
import { auditToolSetHooks, type AuditEntry, type AuditErrorEvent } from '../index.js';
import { SqliteAuditLog } from './index.js';

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'toolbus-audit-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const T0 = Date.parse('2025-01-31T12:00:00.000Z');

function entry(n: number, fields: Partial<AuditEntry> = {}): AuditEntry {
  return {
    time: new Date(T0 + n * 1000).toISOString(),
    kind: 'call',
    caller: 'test',
    user: n % 2 === 0 ? 'alice' : 'bob',
    tool: n % 3 === 0 ? 'echo' : 'other',
    callId: `c${n}`,
    outcome: 'ok',
    durationMs: 1.5,
    argsBytes: 2,
    argsSha256: 'ab',
    ...fields,
  };
}

const echo = new FunctionTool(({ text }: { text: string }) => text, {
  name: 'echo',
  description: 'Echo',
  parameters: z.object({ text: z.string() }),
});

describe('SqliteAuditLog', () => {
  test('records in its own file (mode 0600) and answers the latest matching entries, oldest first, after a reopen too', async (t) => {
    const path = join(tempDir(t), 'home', 'audit.db');
    const now = (): number => T0 + 100_000;
    const log = new SqliteAuditLog({ path, now });
    for (let n = 0; n < 30; n += 1) log.record(entry(n));
    log.record(
      entry(30, {
        kind: 'denied',
        tool: null,
        user: null,
        callId: null,
        outcome: 'unauthorized',
        durationMs: 0,
        argsBytes: 0,
        argsSha256: null,
        request: { method: 'GET', path: '/api/v1/tools', status: 401 },
      }),
    );
    // A query writes what is buffered first: nothing recorded is missing from it.
    const all = await log.query({ limit: 1000 });
    assert.equal(all.length, 31);
    assert.deepEqual(all[0], entry(0));
    assert.deepEqual(all[30]!.request, { method: 'GET', path: '/api/v1/tools', status: 401 });
    assert.deepEqual(
      (await log.query({ limit: 3 })).map((e) => e.callId),
      ['c28', 'c29', null],
    );
    assert.deepEqual(
      (await log.query({ tool: 'echo', user: 'alice', limit: 2 })).map((e) => e.callId),
      ['c18', 'c24'],
    );
    assert.equal((await log.query({ user: 'bob', limit: 1000 })).length, 15);
    assert.deepEqual(
      (await log.query({ since: T0 + 28_000 })).map((e) => e.callId),
      ['c28', 'c29', null],
    );
    await log.close();
    assert.equal(statSync(path).mode & 0o777, 0o600);

    const again = new SqliteAuditLog({ path, now });
    t.after(() => again.close());
    assert.equal((await again.query({ limit: 1000 })).length, 31);
    assert.equal(again.stats().written, 0);
  });

  test('through ToolSet hooks: the SHA-256 and size of the argument text, the text only when opted in', async (t) => {
    const dir = tempDir(t);
    const hashed = new SqliteAuditLog({ path: join(dir, 'hashed.db') });
    const kept = new SqliteAuditLog({ path: join(dir, 'kept.db') });
    t.after(() => Promise.all([hashed.close(), kept.close()]));
    const tools = new ToolSet([echo], {
      hooks: {
        onResult: [
          auditToolSetHooks(hashed).onResult,
          auditToolSetHooks(kept, { recordArguments: true }).onResult,
        ],
      },
    });
    const text = '{"text":"naïve"}';
    const result = await tools.call('echo', text, { user: 'alice', caller: 'cli:token@127.0.0.1' });
    assert.equal(result.isError, false);
    await tools.call('echo', '{"text":', { user: 'alice' });
    const [ok, bad] = await hashed.query();
    assert.equal(ok!.argsSha256, createHash('sha256').update(text, 'utf8').digest('hex'));
    assert.equal(ok!.argsBytes, Buffer.byteLength(text));
    assert.equal(ok!.caller, 'cli:token@127.0.0.1');
    assert.equal(ok!.args, undefined);
    assert.equal(bad!.outcome, 'invalid-arguments');
    assert.equal((await kept.query())[0]!.args, text);
  });

  test('retention by age: prune deletes entries past maxAgeMs, and a query hides them before that', async (t) => {
    let now = T0 + 10_000;
    const log = new SqliteAuditLog({
      path: join(tempDir(t), 'audit.db'),
      maxAgeMs: 60_000,
      pruneMs: 3_600_000,
      now: () => now,
    });
    t.after(() => log.close());
    for (let n = 0; n < 10; n += 1) log.record(entry(n));
    await log.flush();
    now = T0 + 65_000; // entries 0..4 are over a minute old
    assert.deepEqual(
      (await log.query()).map((e) => e.callId),
      ['c5', 'c6', 'c7', 'c8', 'c9'],
    );
    assert.equal(log.prune(), 5);
    assert.equal(log.prune(), 0);
  });

  test('retention by size: the oldest entries go while the data is over maxBytes, and the file shrinks', async (t) => {
    const path = join(tempDir(t), 'audit.db');
    const maxBytes = 256 * 1024;
    const log = new SqliteAuditLog({ path, maxBytes, maxAgeMs: Infinity, pruneMs: 0, batchSize: 200 });
    const args = 'x'.repeat(1024);
    for (let n = 0; n < 3000; n += 1) log.record(entry(n, { args }));
    await log.flush();
    const kept = await log.query({ limit: 10_000 });
    assert.ok(kept.length > 50 && kept.length < 3000, `kept ${kept.length} entries`);
    assert.equal(kept.at(-1)!.callId, 'c2999', 'the newest entries stay');
    assert.equal(kept[0]!.callId, `c${3000 - kept.length}`, 'the oldest went first, none in between');
    await log.close();
    assert.ok(statSync(path).size <= maxBytes * 1.25, `file of ${statSync(path).size} bytes`);
  });

  test('a failing store (a lock held elsewhere) is counted and told, never seen by calls, and retried', async (t) => {
    const path = join(tempDir(t), 'audit.db');
    const errors: AuditErrorEvent[] = [];
    let recovered = 0;
    const log = new SqliteAuditLog({
      path,
      busyTimeoutMs: 0,
      flushMs: 10_000,
      onError: (e) => void errors.push(e),
      onRecover: () => void (recovered += 1),
    });
    t.after(() => log.close());
    const tools = new ToolSet([echo], { hooks: auditToolSetHooks(log) });

    const other = new Database(path);
    t.after(() => other.close());
    other.exec('BEGIN EXCLUSIVE');
    for (let n = 0; n < 5; n += 1) {
      const result = await tools.call('echo', `{"text":"${n}"}`);
      assert.equal(result.isError, false);
      assert.equal(result.content, String(n));
    }
    await log.flush();
    assert.equal(errors.length, 1);
    assert.equal(errors[0]!.entries, 5);
    assert.match(errors[0]!.error.message, /audit log 'audit\.db' is locked by another process/);
    assert.doesNotMatch(errors[0]!.error.message, /toolbus-audit-/, 'the folder is not named');
    assert.equal(log.stats().pending, 5);
    assert.equal(log.stats().failures, 1);

    other.exec('COMMIT');
    await log.flush();
    assert.equal(recovered, 1);
    assert.deepEqual(
      (await log.query()).map((e) => e.argsBytes),
      [12, 12, 12, 12, 12],
    );
    assert.equal(log.stats().written, 5);
    assert.equal(log.stats().lastError, undefined);
  });

  test('a file that cannot be opened is a store-error that names the file, not its folder', (t) => {
    const dir = tempDir(t);
    mkdirSync(join(dir, 'audit.db'));
    assert.throws(
      () => new SqliteAuditLog({ path: join(dir, 'audit.db') }),
      (e: Error & { code?: string }) =>
        e.code === 'store-error' &&
        /audit log 'audit\.db' is a directory/.test(e.message) &&
        !e.message.includes(dir),
    );
  });

  test('readOnly reads an existing file, creates nothing and drops what it is given', async (t) => {
    const dir = tempDir(t);
    assert.throws(
      () => new SqliteAuditLog({ path: join(dir, 'audit.db'), readOnly: true }),
      /there is no audit log 'audit\.db' in that folder/,
    );
    const writer = new SqliteAuditLog({ path: join(dir, 'audit.db') });
    writer.record(entry(1, { time: new Date().toISOString() }));
    await writer.flush();
    const reader = new SqliteAuditLog({ path: join(dir, 'audit.db'), readOnly: true });
    reader.record(entry(2));
    assert.deepEqual(
      (await reader.query()).map((e) => e.callId),
      ['c1'],
    );
    await reader.close();
    await writer.close();
  });
});
