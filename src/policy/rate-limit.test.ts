import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolbusError } from '../errors/index.js';
import { parseRate, TokenBucket } from './rate-limit.js';

function assertBadRate(fn: () => unknown, ...fragments: string[]): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof ToolbusError, 'a ToolbusError');
    assert.equal(error.code, 'invalid-config');
    for (const fragment of fragments) {
      assert.ok(error.message.includes(fragment), `${error.message} ∌ ${fragment}`);
    }
    return true;
  });
}

describe('parseRate', () => {
  test('N/s, N/m, N/h, N/d', () => {
    assert.deepEqual(parseRate('20/s'), { tokens: 20, periodMs: 1_000, burst: 20, text: '20/s' });
    assert.deepEqual(parseRate('5/m'), { tokens: 5, periodMs: 60_000, burst: 5, text: '5/m' });
    assert.deepEqual(parseRate('100/h'), { tokens: 100, periodMs: 3_600_000, burst: 100, text: '100/h' });
    assert.deepEqual(parseRate('1000/d'), {
      tokens: 1000,
      periodMs: 86_400_000,
      burst: 1000,
      text: '1000/d',
    });
  });

  test('a multiple of the period: 3/10s, 2/5m', () => {
    assert.deepEqual(parseRate('3/10s'), { tokens: 3, periodMs: 10_000, burst: 3, text: '3/10s' });
    assert.equal(parseRate('2/5m').periodMs, 300_000);
  });

  test('long unit names, case and spaces; text is trimmed', () => {
    assert.equal(parseRate('10/sec').periodMs, 1_000);
    assert.equal(parseRate('10/second').periodMs, 1_000);
    assert.equal(parseRate('10/min').periodMs, 60_000);
    assert.equal(parseRate('10/minute').periodMs, 60_000);
    assert.equal(parseRate('10/hour').periodMs, 3_600_000);
    assert.equal(parseRate('10/day').periodMs, 86_400_000);
    assert.equal(parseRate('10/S').periodMs, 1_000);
    const spaced = parseRate('  7 / m ');
    assert.equal(spaced.tokens, 7);
    assert.equal(spaced.periodMs, 60_000);
    assert.equal(spaced.text, '7 / m');
  });

  test('burst overrides the bucket size; a fractional rate bursts at least 1', () => {
    assert.deepEqual(parseRate('5/s', 50), { tokens: 5, periodMs: 1_000, burst: 50, text: '5/s' });
    assert.equal(parseRate('0.5/s').tokens, 0.5);
    assert.equal(parseRate('0.5/s').burst, 1);
  });

  test('bad rates throw invalid-config naming the expected shape', () => {
    for (const bad of ['', 'fast', '20', '20/', '/s', '0/s', '-1/s', '20/w', '20/s/s', 'x/s', '1e3/s']) {
      assertBadRate(() => parseRate(bad), `'${bad}'`, 'expected N/s, N/m, N/h or N/d', 'e.g. 20/s');
    }
  });

  test('a zero period multiple is refused, not read as one period', () => {
    assertBadRate(() => parseRate('3/0s'), "'3/0s'");
  });

  test('a long bad rate is cut in the message', () => {
    assert.throws(
      () => parseRate('x'.repeat(500)),
      (error: unknown) => error instanceof ToolbusError && !error.message.includes('x'.repeat(41)),
    );
  });

  test('bad bursts throw invalid-config', () => {
    for (const bad of [0, 0.5, -1, NaN, Infinity]) {
      assertBadRate(() => parseRate('5/s', bad), 'burst must be a number ≥ 1', String(bad));
    }
  });
});

describe('TokenBucket', () => {
  test('take returns 0 while tokens last, then the ms until the next one', () => {
    const t0 = 1_000_000;
    const bucket = new TokenBucket(parseRate('2/s'), t0);
    assert.equal(bucket.take(t0), 0);
    assert.equal(bucket.take(t0), 0);
    assert.equal(bucket.take(t0), 500);
    assert.equal(bucket.take(t0), 500, 'a refused take takes nothing');
    assert.equal(bucket.take(t0 + 200), 300);
  });

  test('refills over time at tokens per period, up to the burst', () => {
    const t0 = 5_000;
    const bucket = new TokenBucket(parseRate('2/s'), t0);
    bucket.take(t0);
    bucket.take(t0);
    assert.ok(bucket.take(t0) > 0);
    assert.equal(bucket.take(t0 + 500), 0, 'one token after half a second');
    assert.ok(bucket.take(t0 + 500) > 0);
    // A long quiet spell refills only up to the burst (2).
    const later = t0 + 60_000;
    assert.equal(bucket.take(later), 0);
    assert.equal(bucket.take(later), 0);
    assert.equal(bucket.take(later), 500);
  });

  test('burst larger than the rate allows that many at once', () => {
    const t0 = 0;
    const bucket = new TokenBucket(parseRate('1/m', 3), t0);
    assert.equal(bucket.take(t0), 0);
    assert.equal(bucket.take(t0), 0);
    assert.equal(bucket.take(t0), 0);
    assert.equal(bucket.take(t0), 60_000);
    assert.equal(bucket.take(t0 + 59_999), 1, 'never less than 1 ms while empty');
    assert.equal(bucket.take(t0 + 60_000), 0);
  });

  test('a clock that goes back refills nothing', () => {
    const bucket = new TokenBucket(parseRate('1/s'), 10_000);
    assert.equal(bucket.take(10_000), 0);
    assert.equal(bucket.take(9_000), 1_000);
    assert.equal(bucket.take(11_000), 0);
  });

  test('full() says when the bucket is back to its burst', () => {
    const t0 = 100;
    const bucket = new TokenBucket(parseRate('2/s'), t0);
    assert.equal(bucket.full(t0), true, 'a new bucket is full');
    bucket.take(t0);
    assert.equal(bucket.full(t0), false);
    assert.equal(bucket.full(t0 + 499), false);
    assert.equal(bucket.full(t0 + 500), true);
    bucket.take(t0);
    assert.equal(bucket.full(t0 + 500), false, 'two taken need a full second');
    assert.equal(bucket.full(t0 + 1_000), true);
  });
});
