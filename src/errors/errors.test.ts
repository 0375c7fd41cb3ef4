import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolbusError, ToolbusErrorCode, abortError, isToolbusError, raceSignal } from './index.js';

describe('ToolbusError and isToolbusError', () => {
  test('a toolbus error is recognised, by class or by the brand of another copy; a Node error is not', async () => {
    const e = new ToolbusError('timeout', 'slow');
    assert.equal(e.name, 'ToolbusError');
    assert.equal(isToolbusError(e), true);
    class Sub extends ToolbusError {}
    assert.equal(new Sub('closed', 'x').name, 'Sub');
    // Another copy of the package: a different class with the same registered brand.
    const foreignCopy = Object.assign(new Error('x'), {
      code: 'timeout',
      [Symbol.for('toolbus.ToolbusError')]: true,
    });
    assert.equal(isToolbusError(foreignCopy), true);
    const enoent = await import('node:fs/promises').then((fs) =>
      fs.readFile('/no/such/file').catch((x: unknown) => x),
    );
    assert.equal((enoent as { code?: string }).code, 'ENOENT');
    assert.equal(isToolbusError(enoent), false, 'a string code alone is not a toolbus error');
    assert.equal(isToolbusError(Object.assign(new Error('x'), { code: 'timeout' })), false);
    assert.equal(isToolbusError(null), false);
  });

  test('codes are grouped by layer and merged into one set', () => {
    assert.equal(ToolbusErrorCode.InvalidArguments, 'invalid-arguments');
    assert.equal(ToolbusErrorCode.NotAllowed, 'not-allowed');
    assert.equal(ToolbusErrorCode.Unauthorized, 'unauthorized');
    const values = Object.values(ToolbusErrorCode);
    assert.equal(new Set(values).size, values.length, 'no code is defined twice');
  });
});

describe('abortError and raceSignal', () => {
  test('AbortSignal.timeout gives timeout; any other abort cancelled; a toolbus reason is kept', async () => {
    const timed = AbortSignal.timeout(1);
    await new Promise((r) => setTimeout(r, 20));
    const t = abortError(timed, "tool 'x'");
    assert.deepEqual([t.code, t.message], ['timeout', "tool 'x' timed out"]);
    const c = new AbortController();
    c.abort(new Error('user pressed stop'));
    const cancelled = abortError(c.signal, "tool 'x'");
    assert.deepEqual([cancelled.code, cancelled.message], ['cancelled', "tool 'x' was cancelled"]);
    assert.match(String((cancelled.cause as Error).message), /user pressed stop/);
    const own = new ToolbusError('closed', 'the registry closed');
    const c2 = new AbortController();
    c2.abort(own);
    assert.equal(abortError(c2.signal, 'x'), own);
  });

  test('raceSignal resolves with the work, or rejects with the abort error and removes its listener', async () => {
    assert.equal(await raceSignal(Promise.resolve(1), undefined, 'x'), 1);
    const c = new AbortController();
    assert.equal(await raceSignal(Promise.resolve(2), c.signal, 'x'), 2);
    const never = new Promise<never>(() => undefined);
    const racing = raceSignal(never, c.signal, 'the start');
    c.abort();
    await assert.rejects(racing, { code: 'cancelled', message: 'the start was cancelled' });
    await assert.rejects(raceSignal(never, AbortSignal.abort(), 'x'), { code: 'cancelled' });
  });
});

describe('numberOption', () => {
  test('takes what the rule allows, the fallback for undefined, and refuses the rest with usage', async () => {
    const { numberOption } = await import('./index.js');
    assert.equal(numberOption('X', 'n', undefined, 5), 5);
    assert.equal(numberOption('X', 'n', 2.5, 5), 2.5);
    assert.equal(numberOption('X', 'n', 0, 5, { zero: true }), 0);
    assert.equal(numberOption('X', 'n', Infinity, 5, { infinity: true }), Infinity);
    for (const [value, rule] of [
      [0, {}],
      [-1, {}],
      [NaN, {}],
      ['3', {}],
      [Infinity, {}],
      [1.5, { integer: true }],
      [11, { max: 10 }],
    ] as const) {
      assert.throws(() => numberOption('ToolSet', 'concurrency', value, 1, rule), {
        code: 'usage',
        message: /^ToolSet: option 'concurrency' must be .*, got /,
      });
    }
    assert.throws(() => numberOption('T', 'n', 0, 1, { integer: true }), {
      message: "T: option 'n' must be a positive integer, got 0",
    });
  });
});
