import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { BaseTool } from './base-tool.js';
import { CancellationToken } from './cancellation-token.js';
import { ToolbusError } from '../errors/index.js';
import { ToolError } from './errors.js';
import { FunctionTool } from './function-tool.js';
import type { ToolCallContext } from './tool.js';

/** The seed's example (Saptiva-Agents "Tools" guide): a stock price tool. */
function stockPriceTool(): FunctionTool<z.ZodObject<{ ticker: z.ZodString; date: z.ZodString }>> {
  return new FunctionTool(
    async function get_stock_price({ ticker, date }) {
      // The seed returns a random price; a fixed one keeps the test exact.
      return ticker === 'AAPL' && date === '2021/01/01' ? 143.83831971965762 : 0;
    },
    {
      description: 'Get the stock price.',
      parameters: z.object({
        ticker: z.string().describe('ticker'),
        date: z.string().describe('Date in YYYY/MM/DD'),
      }),
    },
  );
}

describe("the seed's get_stock_price example", () => {
  test('schema has the seed shape { name, description, parameters, strict }', () => {
    assert.equal(
      JSON.stringify(stockPriceTool().schema),
      JSON.stringify({
        name: 'get_stock_price',
        description: 'Get the stock price.',
        parameters: {
          type: 'object',
          properties: {
            ticker: { type: 'string', description: 'ticker' },
            date: { type: 'string', description: 'Date in YYYY/MM/DD' },
          },
          required: ['ticker', 'date'],
          additionalProperties: false,
        },
        strict: false,
      }),
    );
  });

  test('runJson with a CancellationToken, then returnValueAsString', async () => {
    const tool = stockPriceTool();
    const token = new CancellationToken();
    const result = await tool.runJson({ ticker: 'AAPL', date: '2021/01/01' }, token);
    assert.equal(result, 143.83831971965762);
    assert.equal(tool.returnValueAsString(result), '143.83831971965762');
  });

  test('schemaFor("openai-strict") marks the schema strict', () => {
    const strict = stockPriceTool().schemaFor('openai-strict');
    assert.equal(strict.strict, true);
    assert.deepEqual(strict.parameters.required, ['ticker', 'date']);
  });
});

describe('returnValueAsString', () => {
  const tool = stockPriceTool();
  test('strings pass through; everything else becomes JSON', () => {
    assert.equal(tool.returnValueAsString('plain'), 'plain');
    assert.equal(tool.returnValueAsString({ a: [1, 2] }), '{"a":[1,2]}');
    assert.equal(tool.returnValueAsString([1, 2]), '[1,2]');
    assert.equal(tool.returnValueAsString(null), 'null');
    assert.equal(tool.returnValueAsString(true), 'true');
  });
});

describe('runJson failures', () => {
  test('invalid arguments: ToolError invalid-arguments naming each path, expected and received', async () => {
    await assert.rejects(
      stockPriceTool().runJson({ ticker: 5 }),
      (e: unknown) =>
        e instanceof ToolError &&
        e.code === 'invalid-arguments' &&
        e.toolName === 'get_stock_price' &&
        e.message.includes("argument 'ticker' must be a string, got number") &&
        e.message.includes("argument 'date' is required"),
    );
  });

  test('an unknown argument is "not allowed" and the message lists the expected argument names', async () => {
    const tool = new FunctionTool(() => 'joke', {
      name: 'tell-joke',
      description: 'Tells a joke.',
      parameters: {
        type: 'object',
        properties: { topic: { type: 'string' } },
        required: [],
        additionalProperties: false,
      },
    });
    await assert.rejects(tool.runJson({ top: 'cats' }), {
      code: 'invalid-arguments',
      message: "tool 'tell-joke': invalid arguments: argument 'top' is not allowed; expected one of: topic",
    });
    const zodTool = new FunctionTool(() => 'joke', {
      name: 'tell-joke',
      description: 'Tells a joke.',
      parameters: z.strictObject({ topic: z.string().optional(), style: z.string().optional() }),
    });
    await assert.rejects(zodTool.runJson({ top: 'cats' }), {
      message:
        "tool 'tell-joke': invalid arguments: argument 'top' is not allowed; expected one of: topic, style",
    });
  });

  test('a thrown error becomes tool-error with the original as cause', async () => {
    const boom = new Error('quota exhausted');
    const tool = new FunctionTool(
      () => {
        throw boom;
      },
      { name: 'fails', description: 'Always fails.', parameters: z.object({}) },
    );
    await assert.rejects(
      tool.runJson({}),
      (e: unknown) =>
        e instanceof ToolError &&
        e.code === 'tool-error' &&
        e.cause === boom &&
        e.message === "tool 'fails' failed: quota exhausted",
    );
  });

  test('a ToolError thrown by the tool is kept as it is (remote timeout/unavailable survive)', async () => {
    const remote = new ToolError('unavailable', 'no service is listening on request:tg:joke');
    const tool = new FunctionTool(
      async () => {
        throw remote;
      },
      { name: 'remote', description: 'Remote.', parameters: z.object({}) },
    );
    await assert.rejects(tool.runJson({}), (e: unknown) => e === remote);
  });

  test('an already aborted signal rejects with cancelled before running', async () => {
    let ran = false;
    const tool = new FunctionTool(
      () => {
        ran = true;
      },
      { name: 'noop', description: 'Nothing.', parameters: z.object({}) },
    );
    const token = new CancellationToken();
    token.cancel();
    await assert.rejects(
      tool.runJson({}, token),
      (e: unknown) => e instanceof ToolError && e.code === 'cancelled',
    );
    assert.equal(ran, false);
  });

  test('cancellation in the middle of a call aborts the signal the tool sees and rejects with cancelled', async () => {
    let sawAbort = false;
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const tool = new FunctionTool(
      (_args, { signal }) =>
        new Promise((_resolve, reject) => {
          started();
          signal.addEventListener('abort', () => {
            sawAbort = true;
            reject(new Error('stopped'));
          });
        }),
      { name: 'waits', description: 'Waits until cancelled.', parameters: z.object({}) },
    );
    const token = new CancellationToken();
    const pending = tool.runJson({}, token);
    await running;
    token.cancel();
    await assert.rejects(pending, (e: unknown) => e instanceof ToolError && e.code === 'cancelled');
    assert.equal(sawAbort, true);
  });

  test('cancelling abandons the await even when the function ignores its signal (as AutoGen does)', async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    let finish!: () => void;
    const tool = new FunctionTool(
      () =>
        new Promise<string>((resolve) => {
          started();
          finish = () => resolve('late');
        }),
      { name: 'deaf', description: 'Never looks at its signal.', parameters: z.object({}) },
    );
    const token = new CancellationToken();
    const pending = tool.runJson({}, token);
    await running;
    token.cancel();
    try {
      await assert.rejects(pending, (e: unknown) => e instanceof ToolError && e.code === 'cancelled');
    } finally {
      finish();
    }
  });
});

describe('FunctionTool construction', () => {
  test('fn receives typed, parsed arguments and a context with signal and callId', async () => {
    let seen: ToolCallContext | undefined;
    const tool = new FunctionTool(
      (args, ctx) => {
        seen = ctx;
        const n: number = args.n; // typed from the zod schema (checked by tsc)
        return n * 2;
      },
      { name: 'double', description: 'Doubles.', parameters: z.object({ n: z.coerce.number() }) },
    );
    assert.equal(await tool.runJson({ n: '21' }, undefined, { callId: 'call-1', user: 'alice' }), 42);
    assert.equal(seen?.callId, 'call-1');
    assert.equal(seen?.user, 'alice');
    assert.ok(seen?.signal instanceof AbortSignal);
  });

  test('an anonymous function without a name is refused clearly', () => {
    assert.throws(
      () => new FunctionTool(() => 1, { description: 'x', parameters: z.object({}) }),
      (e: unknown) =>
        e instanceof ToolbusError && e.code === 'invalid-name' && e.message.includes('anonymous'),
    );
  });

  test('an invalid name is refused at construction', () => {
    assert.throws(
      () => new FunctionTool(() => 1, { name: 'files.read', description: 'x', parameters: z.object({}) }),
      (e: unknown) =>
        e instanceof ToolbusError && e.code === 'invalid-name' && e.message.includes("'files.read'"),
    );
  });

  test('a bad schema is refused with invalid-schema naming the tool', () => {
    assert.throws(
      () => new FunctionTool(() => 1, { name: 't', description: 'x', parameters: { type: 'array' } }),
      (e: unknown) =>
        e instanceof ToolbusError && e.code === 'invalid-schema' && e.message.startsWith("tool 't':"),
    );
  });
});

describe('BaseTool subclasses with raw JSON Schema', () => {
  class Lookup extends BaseTool {
    constructor() {
      super({
        name: 'lookup',
        description: 'Look a record up.',
        parameters: {
          type: 'object',
          properties: { key: { $ref: '#/$defs/Key', description: 'The key' } },
          required: ['key'],
          $defs: { Key: { type: 'string', pattern: '^k-' } },
        },
        annotations: { readOnly: true },
      });
    }
    protected override async run(args: Record<string, unknown>): Promise<unknown> {
      return { found: args['key'] };
    }
  }

  test('validates through $defs/$ref and runs', async () => {
    const tool = new Lookup();
    assert.deepEqual(await tool.runJson({ key: 'k-1' }), { found: 'k-1' });
    assert.deepEqual(tool.annotations, { readOnly: true });
    assert.ok('$defs' in tool.schema.parameters);
    await assert.rejects(
      tool.runJson({ key: 'x' }),
      (e: unknown) => e instanceof ToolError && e.code === 'invalid-arguments' && e.message.includes("'key'"),
    );
  });
});

describe('a validator that throws', () => {
  test('becomes tool-error with the cause, not an untyped rejection', async () => {
    const tool = new FunctionTool(() => 'never', {
      name: 'buggy',
      description: 'x',
      parameters: z.object({
        n: z.number().refine(() => {
          throw new RangeError('refinement bug');
        }),
      }),
    });
    await assert.rejects(
      tool.runJson({ n: 1 }),
      (e: unknown) => e instanceof ToolError && e.code === 'tool-error' && e.cause instanceof RangeError,
    );
  });
});
