import { describe, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { RebuildScheduler } from './rebuild-scheduler.js';

/** A rebuild the test finishes by hand, counting its runs. */
function manualRebuild() {
  let runs = 0;
  const finishers: (() => void)[] = [];
  const rebuild = (): Promise<void> => {
    runs++;
    return new Promise<void>((resolve) => finishers.push(resolve));
  };
  return { rebuild, runs: () => runs, finish: () => finishers.shift()?.() };
}

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('RebuildScheduler', () => {
  test('runs one rebuild at a time; runs asked for meanwhile share one more run right after', async () => {
    const r = manualRebuild();
    const scheduler = new RebuildScheduler(r.rebuild, {
      debounceMs: 0,
      signal: new AbortController().signal,
    });
    const first = scheduler.run();
    const second = scheduler.run();
    const third = scheduler.run();
    assert.equal(second, first);
    assert.equal(third, first);
    assert.equal(r.runs(), 1);
    r.finish();
    await flush();
    assert.equal(r.runs(), 2, 'the changes asked for during the first run are built from');
    r.finish();
    await first;
    assert.equal(r.runs(), 2);
    assert.equal(scheduler.running, undefined);
  });

  test('changes within debounceMs share one rebuild; an abort cancels a scheduled one', async (t) => {
    mock.timers.enable({ apis: ['setTimeout'] });
    t.after(() => mock.timers.reset());
    const r = manualRebuild();
    const controller = new AbortController();
    const scheduler = new RebuildScheduler(r.rebuild, { debounceMs: 25, signal: controller.signal });
    scheduler.schedule();
    mock.timers.tick(10);
    scheduler.schedule();
    mock.timers.tick(15);
    assert.equal(r.runs(), 1);
    r.finish();
    await flush();

    scheduler.schedule();
    controller.abort();
    mock.timers.tick(25);
    scheduler.schedule();
    mock.timers.tick(25);
    assert.equal(r.runs(), 1);
  });

  test('a scheduled rebuild is spaced from the last one by its work; a run() asked for is not', async (t) => {
    mock.timers.enable({ apis: ['setTimeout'] });
    t.after(() => mock.timers.reset());
    let runs = 0;
    let work = 0;
    const scheduler = new RebuildScheduler(
      () => {
        runs++;
        return Promise.resolve(work);
      },
      { debounceMs: 10, signal: new AbortController().signal },
    );
    work = 100; // ms of its own work: the next scheduled one waits about 4 × 100 ms
    await scheduler.run();
    scheduler.schedule();
    mock.timers.tick(390);
    assert.equal(runs, 1);
    mock.timers.tick(20);
    await flush();
    assert.equal(runs, 2);

    work = 0;
    await scheduler.run();
    assert.equal(runs, 3, 'run() does not wait');
    work = 1_000_000; // spaced at most MAX_REBUILD_SPACING_MS
    await scheduler.run();
    scheduler.schedule();
    mock.timers.tick(1_001);
    await flush();
    assert.equal(runs, 5);
  });

  test('a scheduled rebuild that comes due while one runs is spaced from its end, not run right after', async (t) => {
    mock.timers.enable({ apis: ['setTimeout'] });
    t.after(() => mock.timers.reset());
    const finishers: (() => void)[] = [];
    let runs = 0;
    const scheduler = new RebuildScheduler(
      () => {
        runs++;
        return new Promise<number>((resolve) => finishers.push(() => resolve(50)));
      },
      { debounceMs: 10, signal: new AbortController().signal },
    );
    const first = scheduler.run();
    scheduler.schedule();
    mock.timers.tick(10); // due while the first one runs
    assert.equal(runs, 1);
    finishers.shift()!();
    await first;
    mock.timers.tick(190);
    assert.equal(runs, 1, 'spaced 4 × 50 ms from the end of the first');
    mock.timers.tick(10);
    assert.equal(runs, 2);
    finishers.shift()!();
  });
});
