/**
 * Tracing of `ToolSet.call`: without an SDK the call takes its direct path and makes no span; with the
 * real SDK registered (in memory) each call is an `execute_tool {name}` span, its arguments and result
 * recorded only with `TOOLBUS_TRACE_CONTENT=1`. The first suite must run before the SDK is started.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { z } from 'zod';
import { startTestTracing, parentIdOf, type TestTracing } from '../../test/support/tracing.js';
import { FunctionTool } from './function-tool.js';
import { ToolSet } from './tool-set.js';
import { TRACE_CONTENT_ENV, setTraceContent, startSpan, tracingEnabled } from './tracing.js';

const add = new FunctionTool(({ a, b }) => a + b, {
  name: 'add',
  description: 'Adds two numbers.',
  parameters: z.object({ a: z.number().describe('First'), b: z.number().describe('Second') }),
});
const fails = new FunctionTool(
  () => {
    throw new TypeError('disk on fire at /home/alice/secret.txt');
  },
  { name: 'fails', description: 'Always throws.', parameters: z.object({}) },
);

/** Resolves `promise`, reporting whether it settled within `ticks` microtasks. */
async function settlesWithin(promise: Promise<unknown>, ticks: number): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true));
  for (let i = 0; i < ticks; i++) await Promise.resolve();
  const within = settled;
  await promise;
  return within;
}

describe('with no OpenTelemetry SDK registered', () => {
  test('tracing is off, and ToolSet.call takes its direct path: the same result, no span, no extra tick', async () => {
    assert.equal(tracingEnabled(), false);
    let activeSpan: unknown = 'unset';
    const probe = new FunctionTool(
      ({ a }) => {
        activeSpan = trace.getActiveSpan();
        return a;
      },
      { name: 'probe', description: 'Returns a.', parameters: z.object({ a: z.number() }) },
    );
    const tools = new ToolSet([add, probe]);
    const result = await tools.call('add', '{"a": 1, "b": 2}', { callId: 'c1' });
    assert.deepEqual(result, {
      name: 'add',
      callId: 'c1',
      content: '3',
      isError: false,
      arguments: '{"a": 1, "b": 2}',
    });
    // The direct path settles a synchronous tool's call one microtask after the caller subscribes; a
    // traced call would need one more, for the span's `then`.
    assert.equal(await settlesWithin(tools.call('add', '{"a": 1, "b": 2}'), 1), true);
    await tools.call('probe', '{"a": 1}');
    assert.equal(activeSpan, undefined, 'no span is active inside the tool');
  });
});

describe('with the OpenTelemetry SDK registered', () => {
  let tracing: TestTracing;
  before(() => {
    tracing = startTestTracing();
  });
  after(() => tracing.stop());
  beforeEach(() => {
    tracing.reset();
    delete process.env[TRACE_CONTENT_ENV];
    // The variable is read once per process; forget what was read, so each test reads it afresh.
    setTraceContent(undefined);
  });

  test('each call is an execute_tool span with the tool name and call id, and no content by default', async () => {
    assert.equal(tracingEnabled(), true);
    const tools = new ToolSet([add]);
    const result = await tools.call('add', '{"a": 1, "b": 2}', { callId: 'call_7' });
    assert.equal(result.content, '3');
    const span = tracing.one('execute_tool add');
    assert.equal(span.kind, SpanKind.INTERNAL);
    assert.equal(span.status.code, SpanStatusCode.UNSET);
    assert.deepEqual(span.attributes, {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'add',
      'gen_ai.tool.call.id': 'call_7',
      'gen_ai.tool.type': 'function',
      'gen_ai.tool.description': 'Adds two numbers.',
    });
  });

  test('a failed call sets error.type to its code and an error status, without the message by default', async () => {
    const tools = new ToolSet([add, fails]);
    await tools.call('fails', '{}');
    const failed = tracing.one('execute_tool fails');
    assert.equal(failed.attributes['error.type'], 'tool-error');
    assert.deepEqual(failed.status, { code: SpanStatusCode.ERROR });
    await tools.call('add', '{"a": "one"}');
    const invalid = tracing.one('execute_tool add');
    assert.equal(invalid.attributes['error.type'], 'invalid-arguments');
    await tools.call('nope', '{}');
    assert.equal(tracing.one('execute_tool nope').attributes['error.type'], 'unknown-tool');
    for (const span of tracing.spans()) {
      assert.equal(span.attributes['gen_ai.tool.call.arguments'], undefined);
      assert.equal(span.attributes['gen_ai.tool.call.result'], undefined);
      assert.equal(span.status.message, undefined, 'no error text without the opt-in');
    }
  });

  test(`with ${TRACE_CONTENT_ENV}=1 the span carries the arguments, the result and the error text`, async () => {
    process.env[TRACE_CONTENT_ENV] = '1';
    const tools = new ToolSet([add, fails]);
    await tools.call('add', '{"a": 1, "b": 2}');
    await tools.call('fails', { why: 'test' });
    const ok = tracing.one('execute_tool add');
    assert.equal(ok.attributes['gen_ai.tool.call.arguments'], '{"a": 1, "b": 2}');
    assert.equal(ok.attributes['gen_ai.tool.call.result'], '3');
    const failed = tracing.one('execute_tool fails');
    assert.equal(failed.attributes['gen_ai.tool.call.arguments'], '{"why":"test"}');
    assert.match(String(failed.status.message), /disk on fire/);
  });

  test('the tool runs with its span active: spans it starts, even after an await, are children of it', async () => {
    const nested = new FunctionTool(
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 1));
        startSpan('inside', {}).end();
        return 'ok';
      },
      { name: 'nested', description: 'Starts a span.', parameters: z.object({}) },
    );
    // Hooks send the call down the observed path: traced the same way.
    const tools = new ToolSet([nested], { hooks: { onResult: () => undefined } });
    await tools.call('nested', '{}');
    const tool = tracing.one('execute_tool nested');
    const inside = tracing.one('inside');
    assert.equal(parentIdOf(inside), tool.spanContext().spanId);
    assert.equal(inside.spanContext().traceId, tool.spanContext().traceId);
  });
});
