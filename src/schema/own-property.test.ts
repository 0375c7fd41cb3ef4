import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setOwn } from './own-property.js';

test('setOwn makes an own data property, also for keys an object inherits', () => {
  const out: Record<string, unknown> = {};
  for (const key of ['plain', '__proto__', 'toString', 'constructor']) setOwn(out, key, key.length);
  assert.deepEqual(Object.keys(out), ['plain', '__proto__', 'toString', 'constructor']);
  assert.equal(Object.getPrototypeOf(out), Object.prototype, "'__proto__' did not replace the prototype");
  assert.equal(Object.getOwnPropertyDescriptor(out, 'toString')?.value, 8);
});

test('setOwn never runs an inherited setter', () => {
  const target = Object.create({
    set trap(_value: unknown) {
      throw new Error('the setter ran');
    },
  }) as Record<string, unknown>;
  setOwn(target, 'trap', 1);
  assert.deepEqual(Object.getOwnPropertyDescriptor(target, 'trap'), {
    value: 1,
    writable: true,
    enumerable: true,
    configurable: true,
  });
});
