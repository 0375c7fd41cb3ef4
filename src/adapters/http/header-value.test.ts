/**
 * @module Unit tests of header-value.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkHeaders, resolveHeaders } from './header-value.js';
import { ToolError } from '../../tools/index.js';
import { ToolbusError } from '../../errors/index.js';

test('header config: static strings and { env, prefix } pass; anything else is invalid-config naming the header', () => {
  assert.deepEqual(checkHeaders({ A: 'x', B: { env: 'TOKEN', prefix: 'Bearer ' } }, 't'), {
    A: 'x',
    B: { env: 'TOKEN', prefix: 'Bearer ' },
  });
  for (const [headers, fragment] of [
    [{ 'bad name': 'x' }, "header name 'bad name'"],
    [{ A: 'x\r\nInjected: 1' }, "header 'A' must not contain line breaks"],
    [{ A: { env: 'lower-case-dash' } }, "header 'A' must be a string or"],
    [{ A: { env: 'T', secret: 'x' } }, "unknown field 'secret'"],
    [{ A: 3 }, "header 'A' must be a string or"],
  ] as const) {
    assert.throws(
      () => checkHeaders(headers, "tool 't'"),
      (e: unknown) =>
        e instanceof ToolbusError && e.code === 'invalid-config' && e.message.includes(fragment),
    );
  }
});

test('env headers resolve at call time; a missing variable names it but never shows a value', () => {
  const headers = checkHeaders({ Authorization: { env: 'TOKEN', prefix: 'Bearer ' }, X: 'y' }, 't');
  const { values, secret } = resolveHeaders(headers, { TOKEN: 'abc' }, 't');
  assert.deepEqual(values, { Authorization: 'Bearer abc', X: 'y' });
  assert.deepEqual([...secret], ['authorization']);
  assert.throws(
    () => resolveHeaders(headers, { OTHER: 'shh' }, 'probe'),
    (e: unknown) =>
      e instanceof ToolError &&
      e.code === 'invalid-config' &&
      e.toolName === 'probe' &&
      e.message.includes("environment variable 'TOKEN', which is not set") &&
      !e.message.includes('shh'),
  );
  assert.throws(() => resolveHeaders(headers, { TOKEN: 'a\nb' }, 'probe'), /contains a line break/);
});
