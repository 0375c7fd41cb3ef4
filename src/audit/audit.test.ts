import { describe, test } from 'node:test';
import { setImmediate as settle } from 'node:timers/promises';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { createHash } from 'node:crypto';
import { FunctionTool, ToolSet } from '../tools/index.js';
import {
  AuditBuffer,
  MemoryAuditLog,
  auditDeniedHook,
  auditToolSetHooks,
  parseDuration,
  parseLimit,
  parseSince,
  resolveAuditQuery,
  toAuditEntry,
  type AuditEntry,
  type AuditErrorEvent,
  type AuditRecoverEvent,
} from './index.js';

function entry(n: number, fields: Partial<AuditEntry> = {}): AuditEntry {
  return {
    time: new Date(1_700_000_000_000 + n * 1000).toISOString(),
    kind: 'call',
    caller: 'test',
    user: 'alice',
    tool: 'echo',
    callId: `c${n}`,
    outcome: 'ok',
    durationMs: 1,
    argsBytes: 2,
    argsSha256: 'x',
    ...fields,
  };
}

const echo = new FunctionTool(({ text }: { text: string }) => text, {
  name: 'echo',
  description: 'Echo',
  parameters: z.object({ text: z.string() }),
});

describe('durations, since and limit', () => {
  test('parseDuration reads ms, s, m, h, d and w; anything else is undefined', () => {
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('30s'), 30_000);
    assert.equal(parseDuration('15m'), 900_000);
    assert.equal(parseDuration('1.5h'), 5_400_000);
    assert.equal(parseDuration('7d'), 604_800_000);
    assert.equal(parseDuration('2w'), 1_209_600_000);
    for (const bad of ['', '7', 'd', '-1h', '1y', '1 hour']) assert.equal(parseDuration(bad), undefined, bad);
  });

  test('parseSince takes an age back from now or an ISO time, and refuses the rest with usage', () => {
    assert.equal(parseSince('1h', 10_000_000), 10_000_000 - 3_600_000);
    assert.equal(parseSince('2025-01-31T12:00:00Z'), Date.parse('2025-01-31T12:00:00Z'));
    assert.equal(parseSince('2025-01-31'), Date.parse('2025-01-31'));
    for (const bad of ['yesterday', '1', 'May 5', '']) {
      assert.throws(
        () => parseSince(bad),
        (e: Error & { code?: string }) => e.code === 'usage' && /since must be an age/.test(e.message),
        bad,
      );
    }
  });

  test('parseLimit and resolveAuditQuery take 1 to 10000 and default the limit to 100', () => {
    assert.equal(parseLimit('5'), 5);
    for (const bad of ['0', '-1', '1.5', 'ten', '', '10001']) {
      assert.throws(() => parseLimit(bad), /limit must be a whole number from 1 to 10000/, bad);
    }
    assert.deepEqual(resolveAuditQuery(), { tool: undefined, user: undefined, since: undefined, limit: 100 });
    assert.throws(() => resolveAuditQuery({ tool: '' }), /tool must be a non-empty string/);
  });

  test('toAuditEntry keeps a well-formed entry and rejects a foreign object', () => {
    const e = entry(1, { args: '{}' });
    assert.deepEqual(toAuditEntry(JSON.parse(JSON.stringify(e))), e);
    assert.equal(toAuditEntry({ hello: 'world' }), undefined);
    assert.equal(toAuditEntry({ ...e, time: 'not a time' }), undefined);
    assert.equal(toAuditEntry('text'), undefined);
  });
});

describe('the audit hooks', () => {
  test('a ToolSet call is recorded with caller, user, tool, call id, outcome, duration and the SHA-256 of its argument text', async () => {
    const log = new MemoryAuditLog();
    const tools = new ToolSet([echo], { hooks: auditToolSetHooks(log) });
    const text = '{"text":"héllo"}';
    await tools.call('echo', text, { user: 'alice', caller: 'http:token@127.0.0.1', callId: 'call-1' });
    await tools.call('echo', '{"text":3}', { caller: 'agent' });
    await tools.call('nope', {});
    const [ok, invalid, unknown] = await log.query();
    assert.equal(ok!.kind, 'call');
    assert.equal(ok!.caller, 'http:token@127.0.0.1');
    assert.equal(ok!.user, 'alice');
    assert.equal(ok!.tool, 'echo');
    assert.equal(ok!.callId, 'call-1');
    assert.equal(ok!.outcome, 'ok');
    assert.ok(ok!.durationMs >= 0);
    assert.equal(ok!.argsBytes, Buffer.byteLength(text));
    assert.equal(ok!.argsSha256, createHash('sha256').update(text).digest('hex'));
    assert.equal(ok!.args, undefined, 'arguments are not kept unless asked for');
    assert.ok(!Number.isNaN(Date.parse(ok!.time)));
    assert.equal(invalid!.outcome, 'invalid-arguments');
    assert.equal(invalid!.user, null);
    assert.equal(unknown!.outcome, 'unknown-tool');
    assert.equal(unknown!.caller, 'unknown');
    // An object given as such is hashed as its JSON text.
    assert.equal(unknown!.argsSha256, createHash('sha256').update('{}').digest('hex'));
  });

  test('with recordArguments the argument text itself is kept', async () => {
    const log = new MemoryAuditLog();
    const tools = new ToolSet([echo], { hooks: auditToolSetHooks(log, { recordArguments: true }) });
    await tools.call('echo', '{"text":"hi"}');
    assert.equal((await log.query())[0]!.args, '{"text":"hi"}');
  });

  test('a denied request is recorded with no tool, its code as the outcome, and what was asked', async () => {
    const log = new MemoryAuditLog({ maxAgeMs: Infinity });
    auditDeniedHook(log, { now: () => 0 })({
      status: 401,
      code: 'unauthorized',
      method: 'GET',
      path: '/api/v1/tools',
      remote: '127.0.0.1',
    });
    const [denied] = await log.query({ since: 0 });
    assert.deepEqual(denied, {
      time: '1970-01-01T00:00:00.000Z',
      kind: 'denied',
      caller: 'http:unauthenticated@127.0.0.1',
      user: null,
      tool: null,
      callId: null,
      outcome: 'unauthorized',
      durationMs: 0,
      argsBytes: 0,
      argsSha256: null,
      request: { method: 'GET', path: '/api/v1/tools', status: 401 },
    });
  });
});

describe('MemoryAuditLog', () => {
  test('answers the latest entries that match, oldest first, and forgets by age and count', async () => {
    let now = 1_700_000_000_000 + 100_000;
    const log = new MemoryAuditLog({ maxAgeMs: 50_000, maxEntries: 80, now: () => now });
    for (let n = 0; n < 100; n += 1) log.record(entry(n, n % 2 ? { tool: 'other', user: 'bob' } : {}));
    const latest = await log.query({ limit: 3 });
    assert.deepEqual(
      latest.map((e) => e.callId),
      ['c97', 'c98', 'c99'],
    );
    assert.deepEqual(
      (await log.query({ tool: 'echo', limit: 2 })).map((e) => e.callId),
      ['c96', 'c98'],
    );
    assert.equal((await log.query({ user: 'bob', limit: 1000 })).length, 25);
    assert.equal((await log.query({ since: 1_700_000_000_000 + 90_000, limit: 1000 })).length, 10);
    now += 20_000; // entries 0..69 are now over 50 s old
    assert.equal((await log.query({ limit: 1000 })).length, 30);
  });
});

describe('AuditBuffer', () => {
  test('writes in batches off the caller, once a batch is full or on its timer', async () => {
    const batches: number[] = [];
    const buffer = new AuditBuffer((batch) => void batches.push(batch.length), { batchSize: 3, flushMs: 20 });
    for (let n = 0; n < 4; n += 1) buffer.push(entry(n));
    assert.deepEqual(batches, [], 'push never writes inline');
    await new Promise((r) => setTimeout(r, 60));
    assert.deepEqual(batches, [3, 1]);
    assert.equal(buffer.stats().written, 4);
    await buffer.close();
  });

  test('a failing write is counted, told once per outage, retried in order, and the oldest are dropped past maxPending', async () => {
    let failing = true;
    const written: string[] = [];
    const errors: AuditErrorEvent[] = [];
    const recoveries: AuditRecoverEvent[] = [];
    const buffer = new AuditBuffer(
      (batch) => {
        if (failing) throw new Error('disk full');
        for (const e of batch) written.push(e.callId!);
      },
      {
        flushMs: 10_000,
        maxPending: 3,
        onError: (e) => void errors.push(e),
        onRecover: (e) => void recoveries.push(e),
      },
    );
    buffer.push(entry(1));
    buffer.push(entry(2));
    await buffer.flush();
    await buffer.flush();
    assert.equal(errors.length, 2);
    assert.equal(errors[0]!.consecutive, 1);
    assert.match(errors[0]!.error.message, /disk full/);
    assert.equal(buffer.stats().failures, 2);
    assert.equal(buffer.stats().lastError, 'disk full');
    buffer.push(entry(3));
    buffer.push(entry(4)); // over maxPending: entry 1 goes
    assert.deepEqual(buffer.stats().dropped, 1);
    failing = false;
    await buffer.flush();
    assert.deepEqual(written, ['c2', 'c3', 'c4']);
    assert.deepEqual(recoveries, [{ failures: 2, dropped: 1 }]);
    assert.equal(buffer.stats().lastError, undefined);
    await buffer.close();
    buffer.push(entry(5));
    assert.equal(buffer.stats().dropped, 2, 'after close an entry is dropped, not written');
  });

  test('retries of a failing store back off, doubling from flushMs, and new entries do not trigger more', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let attempts = 0;
    const buffer = new AuditBuffer(
      () => {
        attempts += 1;
        throw new Error('locked');
      },
      { flushMs: 100, batchSize: 2 },
    );
    const tick = async (ms: number): Promise<void> => {
      t.mock.timers.tick(ms);
      await settle();
      await settle();
    };
    buffer.push(entry(1));
    await tick(100);
    assert.equal(attempts, 1);
    buffer.push(entry(2));
    buffer.push(entry(3)); // a full batch, but the store is failing: no write at once
    await tick(0);
    assert.equal(attempts, 1);
    await tick(99);
    assert.equal(attempts, 1);
    await tick(1); // flushMs after the first failure
    assert.equal(attempts, 2);
    await tick(199);
    assert.equal(attempts, 2);
    await tick(1); // then twice that
    assert.equal(attempts, 3);
    await tick(399);
    assert.equal(attempts, 3);
    await tick(1); // then twice again
    assert.equal(attempts, 4);
    t.mock.timers.reset();
  });
});
