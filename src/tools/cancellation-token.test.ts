import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CancellationToken } from './cancellation-token.js';

describe('CancellationToken', () => {
  test('cancel() aborts the signal, isCancelled() turns true, callbacks run once', () => {
    const token = new CancellationToken();
    let calls = 0;
    token.addCallback(() => calls++);
    assert.equal(token.isCancelled(), false);
    token.cancel('stop');
    token.cancel('again');
    assert.equal(token.isCancelled(), true);
    assert.equal(token.signal.aborted, true);
    assert.equal(token.signal.reason, 'stop');
    assert.equal(calls, 1);
  });

  test('a callback added after cancellation runs at once', () => {
    const token = new CancellationToken();
    token.cancel();
    let ran = false;
    token.addCallback(() => (ran = true));
    assert.equal(ran, true);
  });

  test('fromSignal follows an AbortSignal', () => {
    const controller = new AbortController();
    const token = CancellationToken.fromSignal(controller.signal);
    assert.equal(token.isCancelled(), false);
    controller.abort('why');
    assert.equal(token.isCancelled(), true);
    assert.equal(token.signal.reason, 'why');
  });
});
