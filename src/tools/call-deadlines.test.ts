import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CallDeadlines } from './call-deadlines.js';

test('call deadlines expire live entries in order and skip cancelled ones', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const expired: [string, number][] = [];
  const entry = (name: string) => ({ name, dueAt: 0, dueQueue: undefined as unknown });
  const deadlines = new CallDeadlines<ReturnType<typeof entry>>((target, ms) =>
    expired.push([target.name, ms]),
  );
  const [a, b, c] = [entry('a'), entry('b'), entry('c')];
  deadlines.add(50, a);
  deadlines.add(50, b);
  deadlines.add(20, c);
  deadlines.cancel(b);
  deadlines.cancel(b);
  t.mock.timers.tick(20);
  assert.deepEqual(expired, [['c', 20]]);
  t.mock.timers.tick(30);
  assert.deepEqual(expired, [
    ['c', 20],
    ['a', 50],
  ]);
});
