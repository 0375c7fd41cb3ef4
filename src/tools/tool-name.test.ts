import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolbusError } from '../errors/index.js';
import {
  TOOL_NAME_PATTERN,
  ToolNameMap,
  decodeToolName,
  encodeToolName,
  validateToolName,
} from './tool-name.js';

describe('validateToolName', () => {
  test('accepts names matching ^[a-zA-Z0-9_-]{1,64}$', () => {
    for (const name of ['get_stock_price', 'tell-joke', 'A1', 'x'.repeat(64)]) validateToolName(name);
  });

  for (const [name, fragment] of [
    ['', 'it is empty'],
    ['files.read', `it contains "."`],
    ['my tool/x', `it contains " ", "/"`],
    ['x'.repeat(65), 'it is 65 characters long (at most 64)'],
  ] as const) {
    test(`refuses ${JSON.stringify(name.slice(0, 12))} with invalid-name saying why`, () => {
      assert.throws(
        () => validateToolName(name),
        (e: unknown) =>
          e instanceof ToolbusError &&
          e.code === 'invalid-name' &&
          e.message.includes(fragment) &&
          e.message.includes('encodeToolName'),
      );
    });
  }
});

describe('encodeToolName / decodeToolName', () => {
  test('valid names without "--" pass through unchanged', () => {
    for (const name of ['get_stock_price', 'tell-joke', 'a-b-c']) {
      assert.equal(encodeToolName(name), name);
      assert.equal(decodeToolName(name), name);
    }
  });

  test('documented examples', () => {
    assert.equal(encodeToolName('files/read.text'), 'files--2f-read--2e-text');
    assert.equal(encodeToolName('a--b'), 'a--2d---2d-b');
    assert.equal(encodeToolName('github.search/issues'), 'github--2e-search--2f-issues');
  });

  test('round-trips foreign names and always yields valid, distinct names', () => {
    const foreign = [
      'files.read',
      'server/tool',
      'my tool',
      'a--b',
      'a-',
      '-a',
      '--',
      'ünïcödé',
      'emoji 🚀 tool',
      'a.b/c d:e',
      'files--2e-read', // looks like an encoding: must be encoded itself
      'x'.repeat(64),
    ];
    const seen = new Set<string>();
    for (const name of foreign) {
      const encoded = encodeToolName(name);
      assert.match(encoded, TOOL_NAME_PATTERN, name);
      assert.equal(decodeToolName(encoded), name);
      assert.ok(!seen.has(encoded), `collision for ${name}`);
      seen.add(encoded);
    }
  });

  test('over-long names are shortened with a hash; a ToolNameMap decodes them, the bare function refuses clearly', () => {
    const long = 'mcp.server/' + 'segment.'.repeat(20);
    const names = new ToolNameMap();
    const encoded = names.encode(long);
    assert.match(encoded, TOOL_NAME_PATTERN);
    assert.equal(names.decode(encoded), long);
    assert.notEqual(encodeToolName(long + 'x'), encoded);
    assert.throws(
      () => decodeToolName(encoded),
      (e: unknown) =>
        e instanceof ToolbusError && e.code === 'invalid-name' && e.message.includes('ToolNameMap'),
    );
  });

  test('a malformed encoding is refused with invalid-name', () => {
    assert.throws(
      () => decodeToolName('a--zz-b'),
      (e: unknown) => e instanceof ToolbusError && e.code === 'invalid-name',
    );
    // Beyond the last Unicode code point: String.fromCodePoint would throw a RangeError.
    assert.throws(
      () => decodeToolName('a--ffffff-b'),
      (e: unknown) => e instanceof ToolbusError && e.code === 'invalid-name',
    );
  });

  test('an empty name cannot be encoded', () => {
    assert.throws(
      () => encodeToolName(''),
      (e: unknown) => e instanceof ToolbusError && e.code === 'invalid-name',
    );
  });
});
