/**
 * @module toolbus/langchain with real `@langchain/core` tools, both directions: LangChain tools as
 * toolbus tools (through `invoke`, so validation and callbacks run) and toolbus tools, a tool service
 * included, as LangChain tools.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import type { Serialized } from '@langchain/core/load/serializable';
import { ToolMessage } from '@langchain/core/messages';
import {
  DynamicStructuredTool,
  StructuredTool,
  ToolInputParsingException,
  tool as lcTool,
} from '@langchain/core/tools';
import type { ToolRunnableConfig } from '@langchain/core/tools';
import * as z from 'zod';
import { z as z3 } from 'zod/v3';
import { LangChainToolAdapter, toLangChainTool } from '../../src/adapters/langchain/index.js';
import { FunctionTool, ToolError } from '../../src/tools/index.js';
import { ToolbusError } from '../../src/errors/index.js';
import type { ToolCallContext } from '../../src/tools/index.js';
import { MemoryBus } from '../../src/bus/index.js';
import { DynamicToolService, createToolServiceTool } from '../../src/services/index.js';

/** Records what LangChain reports to callbacks. */
class Recorder extends BaseCallbackHandler {
  name = 'recorder';
  readonly events: string[] = [];
  override handleToolStart(tool: Serialized, input: string): void {
    this.events.push(`start ${tool.id.at(-1) ?? ''} ${input}`);
  }
  override handleToolEnd(output: unknown): void {
    const content = output instanceof ToolMessage ? output.content : output;
    this.events.push(`end ${String(content)}`);
  }
  override handleToolError(error: Error): void {
    this.events.push(`error ${error.message}`);
  }
}

async function rejectsWith(promise: Promise<unknown>, code: string, fragment: string): Promise<ToolbusError> {
  let caught: unknown;
  await assert.rejects(promise, (error: unknown) => {
    caught = error;
    return true;
  });
  assert.ok(caught instanceof ToolbusError, `expected a ToolbusError, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  assert.ok(caught.message.includes(fragment), caught.message);
  return caught;
}

/** Resolves once `signal` aborts; rejects if that takes more than `ms`. */
function abortedWithin(signal: AbortSignal, ms = 5_000): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(() => reject(new Error('the tool never saw the abort')), ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

describe('LangChainToolAdapter: LangChain tools as toolbus tools', () => {
  const add = lcTool(async ({ a, b }: { a: number; b?: number | undefined }) => a + (b ?? 0), {
    name: 'add',
    description: 'Adds two numbers',
    schema: z.object({ a: z.number().describe('the first number'), b: z.number().optional() }),
  });

  test('a tool() with a zod v4 schema: name, description and parameters come from LangChain', () => {
    const adapter = new LangChainToolAdapter(add);
    assert.equal(adapter.name, 'add');
    assert.equal(adapter.description, 'Adds two numbers');
    assert.deepEqual(adapter.schema.parameters, {
      type: 'object',
      properties: { a: { type: 'number', description: 'the first number' }, b: { type: 'number' } },
      required: ['a'],
      additionalProperties: false,
    });
    assert.equal(adapter.schema.strict, false);
  });

  test('calls go through invoke: callbacks see start and end, the result comes back', async () => {
    const recorder = new Recorder();
    const adapter = new LangChainToolAdapter(add, { callbacks: [recorder] });
    assert.equal(await adapter.runJson({ a: 2, b: 3 }), 5);
    assert.equal(adapter.returnValueAsString(5), '5');
    // As every toolbus tool: nothing is '' (not 'undefined'), and a circular value does not throw.
    assert.equal(adapter.returnValueAsString(undefined), '');
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    assert.equal(adapter.returnValueAsString(circular), '[object Object]');
    assert.deepEqual(recorder.events, ['start DynamicStructuredTool {"a":2,"b":3}', 'end 5']);
  });

  test('null from a strict-profile model for an optional field means absent', async () => {
    assert.equal(await new LangChainToolAdapter(add).runJson({ a: 4, b: null }), 4);
  });

  test("LangChain's validation error becomes invalid-arguments with LangChain's message", async () => {
    const recorder = new Recorder();
    const adapter = new LangChainToolAdapter(add, { callbacks: [recorder] });
    const error = await rejectsWith(
      adapter.runJson({ a: 'two' }),
      'invalid-arguments',
      'Received tool input did not match expected schema',
    );
    assert.ok(error instanceof ToolError);
    assert.equal(error.toolName, 'add');
    assert.ok(error.message.startsWith("tool 'add': "), error.message);
    assert.ok(error.message.includes('expected number'), error.message);
    assert.ok(error.cause instanceof ToolInputParsingException);
    assert.deepEqual(recorder.events, [], 'the tool did not start');
  });

  test('the signal reaches the tool through the RunnableConfig, and the call is cancelled', async () => {
    let seen: AbortSignal | undefined;
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const slow = lcTool(
      async (_input: { q: string }, config?: ToolRunnableConfig) => {
        seen = config?.signal;
        started();
        await abortedWithin(config?.signal ?? new AbortController().signal);
        return 'too late';
      },
      { name: 'slow', description: 'Waits for its signal', schema: z.object({ q: z.string() }) },
    );
    const adapter = new LangChainToolAdapter(slow);
    const controller = new AbortController();
    const call = adapter.runJson({ q: 'x' }, controller.signal);
    await running;
    controller.abort();
    await rejectsWith(call, 'cancelled', "tool 'slow' was cancelled");
    assert.ok(seen, 'the tool got a signal');
    assert.equal(seen.aborted, true);
  });

  test('a StructuredTool subclass with a zod v3 schema, and a thrown error as tool-error seen by callbacks', async () => {
    class Divide extends StructuredTool {
      name = 'divide';
      description = 'Divides a by b';
      schema = z3.object({ a: z3.number(), b: z3.number() });
      protected async _call({ a, b }: { a: number; b: number }): Promise<string> {
        if (b === 0) throw new Error('division by zero');
        return String(a / b);
      }
    }
    const recorder = new Recorder();
    const adapter = new LangChainToolAdapter(new Divide(), { callbacks: [recorder] });
    assert.deepEqual(adapter.schema.parameters['required'], ['a', 'b']);
    assert.equal(await adapter.runJson({ a: 9, b: 3 }), '3');
    await rejectsWith(adapter.runJson({ a: 1, b: 0 }), 'tool-error', "tool 'divide': division by zero");
    assert.deepEqual(recorder.events.at(-1), 'error division by zero');
  });

  test('a DynamicStructuredTool with a JSON schema, its validation included', async () => {
    const echo = new DynamicStructuredTool({
      name: 'echo',
      description: 'Echoes x',
      schema: { type: 'object', properties: { x: { type: 'integer' } }, required: ['x'] },
      func: async (input: { x: number }) => `x=${input.x}`,
    });
    const adapter = new LangChainToolAdapter(echo, { name: 'echo_json' });
    assert.equal(adapter.name, 'echo_json');
    assert.deepEqual(adapter.schema.parameters['properties'], { x: { type: 'integer' } });
    assert.equal(await adapter.runJson({ x: 4 }), 'x=4');
    await rejectsWith(adapter.runJson({ x: 'four' }), 'invalid-arguments', 'did not match expected schema');
  });

  test('a LangChain name that is not a valid tool name is refused, with a way out', () => {
    const spaced = lcTool(async () => 'ok', {
      name: 'my tool',
      description: 'd',
      schema: z.object({}),
    });
    assert.throws(
      () => new LangChainToolAdapter(spaced),
      (error: unknown) => error instanceof ToolbusError && error.code === 'invalid-name',
    );
    assert.equal(new LangChainToolAdapter(spaced, { name: 'my_tool' }).name, 'my_tool');
  });
});

describe('toLangChainTool: toolbus tools as LangChain tools', () => {
  const weather = new FunctionTool(
    ({ city, units }: { city: string; units?: 'c' | 'f' | undefined }, ctx: ToolCallContext) => ({
      city,
      temperature: units === 'f' ? 72 : 22,
      callId: ctx.callId,
    }),
    {
      name: 'get_weather',
      description: 'Weather for a city',
      parameters: z.object({ city: z.string().describe('city name'), units: z.enum(['c', 'f']).optional() }),
    },
  );

  test('the LangChain tool carries the JSON schema and returns the string result; callbacks run', async () => {
    const lc = toLangChainTool(weather);
    assert.ok(lc instanceof DynamicStructuredTool);
    assert.equal(lc.name, 'get_weather');
    assert.equal(lc.description, 'Weather for a city');
    assert.deepEqual(lc.schema, weather.schema.parameters);
    const recorder = new Recorder();
    const out = await lc.invoke({ city: 'Lima', units: 'f' }, { callbacks: [recorder] });
    assert.equal(typeof out, 'string');
    assert.deepEqual(JSON.parse(out as string).temperature, 72);
    assert.equal(recorder.events.length, 2);
    assert.ok(recorder.events[0]?.startsWith('start DynamicStructuredTool'), recorder.events[0]);
    assert.ok(recorder.events[1]?.startsWith('end {"city":"Lima"'), recorder.events[1]);
  });

  test('invoked with a tool call, the call id reaches the toolbus tool and a ToolMessage comes back', async () => {
    const lc = toLangChainTool(weather);
    const message = await lc.invoke({
      id: 'call_123',
      name: 'get_weather',
      args: { city: 'Oslo' },
      type: 'tool_call',
    });
    assert.ok(message instanceof ToolMessage);
    assert.equal(message.tool_call_id, 'call_123');
    assert.equal(JSON.parse(String(message.content)).callId, 'call_123');
  });

  test('invalid input is refused by LangChain with the details', async () => {
    const lc = toLangChainTool(weather);
    await assert.rejects(lc.invoke({ city: 5 } as never), (error: unknown) => {
      assert.ok(error instanceof ToolInputParsingException);
      assert.match(error.message, /did not match expected schema/);
      assert.match(error.message, /city/);
      return true;
    });
  });

  test('a failing toolbus tool throws its ToolError, and LangChain reports it to handleToolError', async () => {
    const failing = new FunctionTool(
      () => {
        throw new Error('backend down');
      },
      { name: 'failing', description: 'always fails', parameters: z.object({}) },
    );
    const recorder = new Recorder();
    await assert.rejects(toLangChainTool(failing).invoke({}, { callbacks: [recorder] }), (error: unknown) => {
      assert.ok(error instanceof ToolError);
      assert.equal(error.code, 'tool-error');
      assert.match(error.message, /backend down/);
      return true;
    });
    assert.match(recorder.events.at(-1) ?? '', /^error .*backend down/);
  });

  test('handleToolError returns the message instead: a string, or an error ToolMessage for a tool call', async () => {
    const failing = new FunctionTool(
      () => {
        throw new Error('backend down');
      },
      { name: 'failing', description: 'always fails', parameters: z.object({}) },
    );
    const lc = toLangChainTool(failing, { handleToolError: true });
    assert.match(String(await lc.invoke({})), /tool 'failing' failed: backend down/);
    const message = await lc.invoke({ id: 'c1', name: 'failing', args: {}, type: 'tool_call' });
    assert.ok(message instanceof ToolMessage);
    assert.equal(message.status, 'error');
    assert.match(String(message.content), /backend down/);
    const custom = toLangChainTool(failing, { handleToolError: (e) => `sorry (${e.code})` });
    assert.equal(await custom.invoke({}), 'sorry (tool-error)');
  });

  test("LangChain's signal cancels the toolbus call", async () => {
    let seen: AbortSignal | undefined;
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const waiting = new FunctionTool(
      async (_args: Record<string, unknown>, ctx: ToolCallContext) => {
        seen = ctx.signal;
        started();
        await abortedWithin(ctx.signal);
        throw ctx.signal.reason;
      },
      { name: 'waiting', description: 'waits', parameters: z.object({}) },
    );
    const controller = new AbortController();
    const call = toLangChainTool(waiting).invoke({}, { signal: controller.signal });
    await running;
    controller.abort();
    await assert.rejects(call, (error: unknown) => error instanceof ToolError && error.code === 'cancelled');
    assert.equal(seen?.aborted, true);
  });

  test('a tool service on a bus is callable from LangChain, user and config from toolbus, cancellation across', async (t) => {
    const bus = new MemoryBus();
    let cancelledRemotely = false;
    const service = new DynamicToolService({
      bus,
      id: 'joke-service',
      topic: 'joke',
      invoke: async (user, config, args, ctx) => {
        if (args['topic'] === 'slow') {
          await abortedWithin(ctx.signal).catch(() => undefined);
          cancelledRemotely = ctx.signal.aborted;
          return 'never';
        }
        return `Hey ${user}! A ${String(config['style'])} joke about ${String(args['topic'])}`;
      },
    });
    await service.start();
    t.after(async () => {
      await service.stop();
      await bus.close();
    });
    const { tool } = createToolServiceTool({
      bus,
      service: {
        id: 'joke-service',
        'request-queue': 'non-persistent://tg/request/joke',
        'response-queue': 'non-persistent://tg/response/joke',
        'config-params': [{ name: 'style', required: true }],
      },
      tool: {
        type: 'tool-service',
        name: 'tell-joke',
        description: 'Tells a joke',
        service: 'joke-service',
        style: 'pun',
        arguments: [{ name: 'topic', type: 'string', description: 'what about' }],
      },
    });
    const lc = toLangChainTool(tool, { user: 'alice' });
    assert.equal(await lc.invoke({ topic: 'cats' }), 'Hey alice! A pun joke about cats');
    assert.equal(
      await lc.invoke({ topic: 'dogs' }, { configurable: { user: 'bob' } }),
      'Hey bob! A pun joke about dogs',
    );
    const controller = new AbortController();
    const call = lc.invoke({ topic: 'slow' }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await assert.rejects(call, (error: unknown) => error instanceof ToolError && error.code === 'cancelled');
    for (let i = 0; i < 100 && !cancelledRemotely; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(cancelledRemotely, true, 'the service saw the cancel');
  });

  test('round trip: a toolbus tool through LangChain and back is still validated and callable', async () => {
    const back = new LangChainToolAdapter(toLangChainTool(weather));
    assert.deepEqual(back.schema.parameters, weather.schema.parameters);
    const out = (await back.runJson({ city: 'Quito' })) as string;
    assert.equal(JSON.parse(out).city, 'Quito');
    await rejectsWith(back.runJson({ city: 1 }), 'invalid-arguments', 'did not match expected schema');
  });
});
