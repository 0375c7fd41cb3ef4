import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { BusProperties } from '../../bus/index.js';
import {
  cancelReasonOf,
  cancelTopicOf,
  echoPropertiesOf,
  readCancelReason,
  readDeadline,
  readId,
  readTraceparent,
} from './envelope.js';

/** Properties as a JavaScript caller of MemoryBus may send them, whatever `BusProperties` says. */
const loose = (value: Record<string, unknown>): BusProperties => value as BusProperties;

describe('the RPC envelope', () => {
  test('readDeadline takes decimal text and finite numbers; blank, garbage and other types are no deadline', () => {
    assert.equal(readDeadline({ deadline: '1700000000000' }), 1_700_000_000_000);
    assert.equal(readDeadline({ deadline: ' 1700000000000 ' }), 1_700_000_000_000);
    assert.equal(readDeadline(loose({ deadline: 5 })), 5);
    for (const raw of [undefined, '', ' ', 'soon', 'NaN', 'Infinity', {}, [], null, true, Number.NaN]) {
      assert.equal(readDeadline(loose({ deadline: raw })), undefined, `deadline ${String(raw)}`);
    }
    assert.equal(readDeadline(loose({ deadline: Number.POSITIVE_INFINITY })), undefined);
  });

  test('readId wants a non-empty string; anything else is no id', () => {
    assert.equal(readId({ id: 'a1' }), 'a1');
    for (const raw of [undefined, '', 5, {}, null]) assert.equal(readId(loose({ id: raw })), undefined);
    assert.equal(readId(undefined), undefined);
  });

  test('only text trace context is echoed; the cancel reason and traceparent are read as text only', () => {
    assert.deepEqual(echoPropertiesOf('a', { traceparent: 't', tracestate: 's', deadline: '1' }), {
      id: 'a',
      traceparent: 't',
      tracestate: 's',
    });
    assert.deepEqual(echoPropertiesOf('a', loose({ traceparent: 7, tracestate: 's' })), { id: 'a' });
    assert.deepEqual(echoPropertiesOf('a', loose({ traceparent: 't', tracestate: 7 })), {
      id: 'a',
      traceparent: 't',
    });
    assert.equal(readTraceparent(loose({ traceparent: 7 })), undefined);
    assert.equal(readCancelReason(loose({ cancel: 7 })), undefined);
    assert.equal(readCancelReason({ cancel: '' }), undefined);
    assert.equal(readCancelReason({ cancel: 'user left' }), 'user left');
  });

  test('the control topic is the canonical request queue plus :cancel; a cancel reason is one short line', () => {
    assert.equal(cancelTopicOf('non-persistent://tg/request/agent'), 'request:tg:agent:cancel');
    assert.equal(cancelReasonOf('a\r\n  b\nc'), 'a b c');
    assert.equal(cancelReasonOf('x'.repeat(600)).length, 501);
  });
});
