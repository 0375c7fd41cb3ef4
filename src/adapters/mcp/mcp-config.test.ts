import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolbusError } from '../../errors/index.js';
import { schemaToArguments } from './import-mcp-tools.js';
import { parseMcpConfig } from './mcp-config.js';
import { callToolResultToValue, describeContentBlock } from './mcp-result.js';
import {
  DEFAULT_MCP_MAX_TOTAL_TIMEOUT_MS,
  DEFAULT_MCP_TIMEOUT_MS,
  resolveMcpServerParams,
} from './server-params.js';

function invalidConfig(fragment: RegExp): (error: unknown) => boolean {
  return (error) => {
    assert.ok(error instanceof ToolbusError);
    assert.equal(error.code, 'invalid-config');
    assert.match(error.message, fragment);
    return true;
  };
}

describe('parseMcpConfig (mcp/<id>, TrustGraph fields)', () => {
  test('url, remote-name and auth-token mean what they mean in TrustGraph', () => {
    const config = parseMcpConfig('weather', {
      url: 'http://127.0.0.1:8000/mcp',
      'remote-name': 'get_weather',
      'auth-token': 's3cret',
    });
    assert.equal(config.remoteName, 'get_weather');
    assert.deepEqual(config.params, {
      id: 'weather',
      url: 'http://127.0.0.1:8000/mcp',
      headers: { Authorization: 'Bearer s3cret' },
    });
    assert.equal(parseMcpConfig('weather', { url: 'http://h/mcp' }).remoteName, 'weather');
  });

  test('stdio servers, SSE and timeouts', () => {
    const stdio = parseMcpConfig('files', {
      command: 'npx',
      args: ['-y', 'server'],
      env: { A: '1' },
      'timeout-ms': 120_000,
    });
    assert.deepEqual(stdio.params, {
      id: 'files',
      command: 'npx',
      args: ['-y', 'server'],
      env: { A: '1' },
      timeoutMs: 120_000,
    });
    const sse = parseMcpConfig('old', { url: 'http://h/sse', transport: 'sse' });
    assert.equal((sse.params as { transport?: string }).transport, 'sse');
  });

  test('items reaching the same server share a connection key; different tokens do not', () => {
    const a = parseMcpConfig('a', { url: 'http://h/mcp', 'remote-name': 'x' });
    const b = parseMcpConfig('b', { url: 'http://h/mcp', 'remote-name': 'y' });
    const c = parseMcpConfig('c', { url: 'http://h/mcp', 'auth-token': 'other' });
    assert.equal(a.connectionKey, b.connectionKey);
    assert.notEqual(a.connectionKey, c.connectionKey);
  });

  test('bad items are rejected naming the item and the field', () => {
    assert.throws(() => parseMcpConfig('x', undefined), invalidConfig(/config 'mcp\/x' does not exist/));
    assert.throws(
      () => parseMcpConfig('x', {}),
      invalidConfig(/exactly one of 'url' \(HTTP\) and 'command'/),
    );
    assert.throws(() => parseMcpConfig('x', { url: 'nope' }), invalidConfig(/'url' must be an absolute URL/));
    assert.throws(
      () => parseMcpConfig('x', { command: 'a', args: [1] }),
      invalidConfig(/'args' must be an array of strings/),
    );
    assert.throws(
      () => parseMcpConfig('x', { url: 'http://h', headers: { a: 1 } }),
      invalidConfig(/'headers.a' must be a string/),
    );
    assert.throws(
      () => parseMcpConfig('x', { url: 'http://h', 'timeout-ms': -1 }),
      invalidConfig(/'timeout-ms'/),
    );
  });
});

describe('resolveMcpServerParams', () => {
  test('defaults: 60 s per request, no hidden lower timeout, a 30 min total cap', () => {
    const p = resolveMcpServerParams({ url: 'http://127.0.0.1:1/mcp' });
    assert.equal(p.timeoutMs, DEFAULT_MCP_TIMEOUT_MS);
    assert.equal(p.timeoutMs, 60_000);
    assert.equal(p.connectTimeoutMs, 60_000);
    assert.equal(p.maxTotalTimeoutMs, DEFAULT_MCP_MAX_TOTAL_TIMEOUT_MS);
    assert.equal(p.protocol, 'auto');
    assert.equal(p.kind, 'streamable-http');
  });

  test('per-tool timeouts and a cap never below the timeout', () => {
    const p = resolveMcpServerParams({
      command: 'x',
      timeoutMs: 3_600_000,
      toolTimeoutsMs: { slow: 7_200_000 },
    });
    assert.equal(p.toolTimeoutsMs.slow, 7_200_000);
    // The default cap (30 min) is lower than this timeout, so the cap rises to it.
    assert.equal(p.maxTotalTimeoutMs, 3_600_000);
    assert.throws(() => resolveMcpServerParams({ command: 'x', timeoutMs: 0 }), invalidConfig(/'timeoutMs'/));
    assert.throws(() => resolveMcpServerParams({} as never), invalidConfig(/need `command`/));
  });
});

describe('MCP results', () => {
  test('every content kind is described, none dropped', () => {
    assert.equal(describeContentBlock({ type: 'text', text: 'hi' }), 'hi');
    assert.equal(
      describeContentBlock({ type: 'image', data: 'AAAA', mimeType: 'image/png' }),
      '[image: image/png, 3 bytes]',
    );
    assert.equal(
      describeContentBlock({ type: 'audio', data: 'AA==', mimeType: 'audio/wav' }),
      '[audio: audio/wav, 1 bytes]',
    );
    assert.equal(
      describeContentBlock({
        type: 'resource_link',
        uri: 'file:///a',
        name: 'a',
        mimeType: 'text/plain',
        size: 10,
      }),
      '[resource link: a <file:///a>, text/plain, 10 bytes]',
    );
  });

  test('isError becomes a tool-error; structuredContent wins over text', () => {
    assert.throws(
      () => callToolResultToValue('t', { content: [{ type: 'text', text: 'boom' }], isError: true }),
      (e: unknown) =>
        e instanceof ToolbusError && e.code === 'tool-error' && /tool 't': boom/.test(e.message),
    );
    assert.deepEqual(
      callToolResultToValue('t', {
        content: [{ type: 'text', text: '{"x":1}' }],
        structuredContent: { x: 1 },
      }),
      { x: 1 },
    );
  });
});

describe('callToolResultToValue: isError with structuredContent', () => {
  test('details only in structuredContent reach the model, bounded', () => {
    const message = (result: Parameters<typeof callToolResultToValue>[1]): string => {
      try {
        callToolResultToValue('t', result);
      } catch (e) {
        assert.ok(e instanceof ToolbusError && e.code === 'tool-error');
        return e.message;
      }
      assert.fail('expected a tool-error');
    };
    assert.equal(
      message({ content: [], structuredContent: { error: 'quota exceeded', retryAfter: 30 }, isError: true }),
      `tool 't': {"error":"quota exceeded","retryAfter":30}`,
    );
    // Text that already is the JSON is not repeated; other text is kept, the JSON follows.
    const structuredContent = { code: 7 };
    assert.equal(
      message({ content: [{ type: 'text', text: '{"code":7}' }], structuredContent, isError: true }),
      `tool 't': {"code":7}`,
    );
    assert.equal(
      message({ content: [{ type: 'text', text: 'failed' }], structuredContent, isError: true }),
      `tool 't': failed\n{"code":7}`,
    );
    const huge = message({ content: [], structuredContent: { blob: 'x'.repeat(100_000) }, isError: true });
    assert.ok(huge.length < 5000, `message of ${huge.length} characters`);
    assert.match(huge, /bytes cut/);
  });
});

describe('schemaToArguments', () => {
  test('flat schemas become TrustGraph arguments; richer ones stay with the server', () => {
    assert.deepEqual(
      schemaToArguments({
        name: 't',
        inputSchema: {
          type: 'object',
          properties: { q: { type: 'string', description: 'query' }, n: { type: 'integer' } },
          required: ['q'],
        },
      }),
      [
        { name: 'q', type: 'string', description: 'query', required: true },
        { name: 'n', type: 'integer', description: '', required: false },
      ],
    );
    assert.equal(
      schemaToArguments({
        name: 't',
        inputSchema: { type: 'object', properties: { q: { type: 'string', enum: ['a'] } } },
      }),
      undefined,
    );
    assert.equal(
      schemaToArguments({ name: 't', inputSchema: { type: 'object', $defs: {}, properties: {} } as never }),
      undefined,
    );
  });
});
