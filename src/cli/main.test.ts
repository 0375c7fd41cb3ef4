import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DUPLICATE_SIGNAL_MS, signalHandler } from './main.js';

test('one Ctrl-C delivered twice (terminal group, then bin/toolbus.js) stops cleanly; a later second press exits 130', () => {
  let clock = 1_000;
  const exits: number[] = [];
  const controller = new AbortController();
  const onSignal = signalHandler(
    controller,
    (code) => void exits.push(code),
    () => clock,
  );
  onSignal('SIGINT');
  assert.equal(controller.signal.aborted, true);
  assert.match(String((controller.signal.reason as Error).message), /received SIGINT/);
  clock += 5;
  onSignal('SIGINT'); // the wrapper's copy of the same press
  assert.deepEqual(exits, []);
  clock += DUPLICATE_SIGNAL_MS;
  onSignal('SIGINT'); // the user pressing again: stop now
  assert.deepEqual(exits, [130]);
});
