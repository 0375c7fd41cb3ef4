/**
 * `RunStore` on its own: decisions are first-wins, waiting sees a decision made through another store
 * instance (another process on the same store), ids that cannot be keys are unknown, and pruning keeps
 * what is still needed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryConfigStore } from '../config/index.js';
import { RunStore } from './run-store.js';
import { approvalId } from './approval-request.js';

test('a decision through one RunStore wakes a waiter on another over the same store; the second decision is refused', async () => {
  const store = new MemoryConfigStore();
  const here = new RunStore(store);
  const there = new RunStore(store);
  const request = await here.request({
    runId: 'run-1',
    callId: 'c1',
    tool: 'remove',
    arguments: { path: '/x' },
    principal: 'carol',
  });
  assert.equal(request.id, approvalId('run-1', 'c1'));
  // Asking again (a resumed run) returns the same request.
  assert.equal(
    (await here.request({ runId: 'run-1', callId: 'c1', tool: 'remove', arguments: {} })).time,
    request.time,
  );
  const waiting = here.waitForDecision(request.id);
  const [a, b] = await Promise.allSettled([
    there.decide(request.id, { decision: 'approve', by: 'bob', reason: 'ok' }),
    there.decide(request.id, { decision: 'deny', by: 'dave' }),
  ]);
  const winner =
    a.status === 'fulfilled'
      ? a.value
      : (b as PromiseFulfilledResult<Awaited<ReturnType<RunStore['decide']>>>).value;
  const loser = a.status === 'rejected' ? a : b;
  assert.equal(loser.status, 'rejected');
  assert.equal((loser as PromiseRejectedResult).reason.code, 'already-decided');
  const seen = await waiting;
  assert.equal(seen.status, winner.status);
  assert.equal(seen.decision?.by, winner.decision?.by);
  await assert.rejects(there.decide('apr-none', { decision: 'approve', by: 'bob' }), { code: 'not-found' });
  assert.equal(await there.approval('../../etc'), undefined);
  here.close();
  there.close();
});

test('prune removes finished runs and decided approvals past the retention, and keeps pending and unfinished ones', async () => {
  const store = new MemoryConfigStore();
  const runs = new RunStore(store);
  const old = new Date(Date.now() - 10_000).toISOString();
  const base = {
    question: 'q',
    step: 1,
    maxIterations: 10,
    messages: [],
    events: [],
    created: old,
    updated: old,
  };
  await store.put('run', 'run-done', { ...base, id: 'run-done', status: 'done' });
  await store.put('run', 'run-paused', { ...base, id: 'run-paused', status: 'paused' });
  const pending = await runs.request({ runId: 'run-paused', callId: 'c1', tool: 't', arguments: {} });
  const decided = await runs.request({ runId: 'run-done', callId: 'c1', tool: 't', arguments: {} });
  await runs.decide(decided.id, { decision: 'deny', by: 'bob' });
  assert.equal(await runs.prune(60_000), 0, 'nothing is old enough yet');
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(await runs.prune(5), 2);
  assert.deepEqual(
    (await runs.runs()).map((r) => r.id),
    ['run-paused'],
  );
  assert.deepEqual(
    (await runs.approvals()).map((a) => a.id),
    [pending.id],
  );
  runs.close();
});
