import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AgentEvent } from './agent.js';
import { MAX_PROGRESS_MESSAGE_CHARS, PROGRESS_EVENT_INTERVAL_MS, callProgress } from './progress-events.js';

const call = { iteration: 2, toolName: 'convert', callId: 'c1' };
const listening = { onEvent: () => undefined };

/** The reports of the progress events emitted, in order. */
function reporter(intervalMs?: number) {
  const events: AgentEvent[] = [];
  const progress = callProgress(listening, (e) => events.push(e), call, intervalMs)!;
  const reports = () => events.map((e) => (e.type === 'progress' ? e.progress.progress : NaN));
  return { events, progress, reports };
}

describe('callProgress', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 10_000 }));
  afterEach(() => mock.timers.reset());

  test('the first report is an event at once, with the call and the report as wire JSON', () => {
    const { events, progress } = reporter();
    progress.report({ progress: 1, total: 4, message: 'page 1' });
    assert.deepEqual(events, [
      {
        type: 'progress',
        content: '{"call_id":"c1","tool":"convert","progress":1,"total":4,"message":"page 1"}',
        endOfMessage: true,
        iteration: 2,
        toolName: 'convert',
        callId: 'c1',
        progress: { progress: 1, total: 4, message: 'page 1' },
      },
    ]);
  });

  test('a flood within the interval becomes one event with the latest report, when the interval is over', () => {
    const { progress, reports } = reporter();
    progress.report({ progress: 1 });
    for (let i = 2; i <= 50; i++) {
      mock.timers.tick(1);
      progress.report({ progress: i });
    }
    assert.deepEqual(reports(), [1], 'held back within the interval');
    mock.timers.tick(PROGRESS_EVENT_INTERVAL_MS - 49);
    assert.deepEqual(reports(), [1, 50], 'the latest report wins; the ones before it are dropped');
    mock.timers.tick(PROGRESS_EVENT_INTERVAL_MS * 5);
    assert.deepEqual(reports(), [1, 50], 'nothing more without new reports');
    // A report after a quiet interval goes out at once again.
    progress.report({ progress: 51 });
    assert.deepEqual(reports(), [1, 50, 51]);
  });

  test('at most one event per interval however long the flood lasts, each the latest report', () => {
    const times: number[] = [];
    const seen: number[] = [];
    const progress = callProgress(
      listening,
      (e) => {
        times.push(Date.now());
        if (e.type === 'progress') seen.push(e.progress.progress);
      },
      call,
    )!;
    // One report per ms for a second: report i at 10 000 + i - 1 ms.
    for (let i = 1; i <= 1000; i++) {
      progress.report({ progress: i });
      mock.timers.tick(1);
    }
    assert.deepEqual(seen, [1, ...Array.from({ length: 10 }, (_, i) => (i + 1) * 100)]);
    times.slice(1).forEach((time, i) => assert.ok(time - times[i]! >= PROGRESS_EVENT_INTERVAL_MS));
  });

  test('end() emits the report still held back (the trailing one), then ignores later reports', () => {
    const { progress, reports } = reporter();
    progress.report({ progress: 1 });
    progress.report({ progress: 2 });
    progress.report({ progress: 3, total: 3, message: 'done' });
    assert.deepEqual(reports(), [1]);
    progress.end();
    assert.deepEqual(reports(), [1, 3], 'the last report is not lost');
    progress.report({ progress: 4 });
    mock.timers.tick(PROGRESS_EVENT_INTERVAL_MS * 2);
    progress.end();
    assert.deepEqual(reports(), [1, 3], 'no event after the end, and no timer left to fire one');
  });

  test('end() with nothing held back emits nothing', () => {
    const { progress, reports } = reporter();
    progress.end();
    progress.report({ progress: 1 });
    assert.deepEqual(reports(), []);
  });

  test('a run without a listener, or with progress: false, gets no reporter', () => {
    assert.equal(
      callProgress({}, () => assert.fail('emitted'), call),
      undefined,
    );
    assert.equal(
      callProgress({ ...listening, progress: false }, () => assert.fail('emitted'), call),
      undefined,
    );
    assert.ok(callProgress({ ...listening, progress: true }, () => undefined, call));
  });

  test('reports are copied, long messages cut, and reports no client could decode dropped', () => {
    const { events, progress } = reporter(0);
    const reused = { progress: 1, message: 'x'.repeat(MAX_PROGRESS_MESSAGE_CHARS + 10) };
    progress.report(reused);
    reused.progress = 99;
    progress.report({ progress: Number.NaN });
    progress.report({ progress: '3' } as unknown as { progress: number });
    progress.report({ progress: 4, total: Number.POSITIVE_INFINITY, message: 7 } as unknown as {
      progress: number;
    });
    const seen = events.map((e) => (e.type === 'progress' ? e.progress : undefined));
    assert.equal(seen.length, 2);
    assert.equal(seen[0]!.progress, 1, 'a copy: the tool changing its object later changes nothing');
    assert.equal(seen[0]!.message!.length, MAX_PROGRESS_MESSAGE_CHARS + 1);
    assert.ok(seen[0]!.message!.endsWith('…'));
    assert.deepEqual(seen[1], { progress: 4 }, 'a bad total or message is left out');
  });
});
