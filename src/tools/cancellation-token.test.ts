import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
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

describe('CancellationToken.fromSignal on a long-lived signal', () => {
  test('many tokens share one abort listener, and each still follows the signal', () => {
    const controller = new AbortController();
    const tokens = Array.from({ length: 25 }, () => CancellationToken.fromSignal(controller.signal));
    assert.equal(getEventListeners(controller.signal, 'abort').length, 1);
    controller.abort('done');
    assert.equal(
      tokens.every((t) => t.isCancelled() && t.signal.reason === 'done'),
      true,
    );
  });

  test('a cancelled or disposed token detaches; the last one leaves the signal without listeners', () => {
    const controller = new AbortController();
    const cancelled = CancellationToken.fromSignal(controller.signal);
    const disposed = CancellationToken.fromSignal(controller.signal);
    cancelled.cancel('mine');
    assert.equal(getEventListeners(controller.signal, 'abort').length, 1);
    disposed.dispose();
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
    controller.abort('later');
    assert.equal(cancelled.signal.reason, 'mine');
    assert.equal(disposed.isCancelled(), false);
    // A disposed token can still be cancelled on its own.
    disposed.cancel('own');
    assert.equal(disposed.signal.reason, 'own');
  });

  test('Symbol.dispose detaches too', () => {
    const controller = new AbortController();
    const token = CancellationToken.fromSignal(controller.signal);
    token[Symbol.dispose]();
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
  });
});
