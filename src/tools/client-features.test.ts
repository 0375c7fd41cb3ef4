import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { FunctionTool } from './function-tool.js';
import { ToolSet } from './tool-set.js';
import type { RunJsonOptions, Tool, ToolCallContext } from './tool.js';
import { ToolError } from './errors.js';
import { isToolbusError } from '../errors/index.js';
import {
  ToolLogLevel,
  isToolLogLevel,
  type ElicitationRequest,
  type SamplingRequest,
  type ToolClientFeatures,
} from './client-features.js';

const FORM: ElicitationRequest = {
  message: 'Which account?',
  requestedSchema: { type: 'object', properties: { account: { type: 'string' } }, required: ['account'] },
};
const SAMPLE: SamplingRequest = {
  messages: [{ role: 'user', content: { type: 'text', text: 'Say hi' } }],
  maxTokens: 20,
};

/** A tool that asks, samples and logs through its context, and returns what it got. */
function askingTool(): FunctionTool {
  return new FunctionTool(
    async ({ what }: { what: string }, ctx) => {
      ctx.log('info', { step: 'start' }, 'asker');
      if (what === 'elicit') return JSON.stringify(await ctx.elicit(FORM));
      if (what === 'sample') return JSON.stringify(await ctx.sample(SAMPLE));
      return 'logged';
    },
    { name: 'asker', description: 'Asks the caller', parameters: z.object({ what: z.string() }) },
  );
}

describe('ctx.elicit, ctx.sample and ctx.log through ToolSet.call', () => {
  test('the caller’s features answer, with the call’s signal', async () => {
    const seen: { request: unknown; signal: AbortSignal }[] = [];
    const logs: unknown[][] = [];
    const features: ToolClientFeatures = {
      elicit: async (request, { signal }) => {
        seen.push({ request, signal });
        return { action: 'accept', content: { account: 'acme' } };
      },
      sample: async (request, { signal }) => {
        seen.push({ request, signal });
        return {
          role: 'assistant',
          content: { type: 'text', text: 'hi' },
          model: 'm',
          stopReason: 'endTurn',
        };
      },
      log: (level, data, logger) => void logs.push([level, data, logger]),
    };
    const tools = new ToolSet([askingTool()]);
    const elicited = await tools.call('asker', { what: 'elicit' }, { clientFeatures: features });
    assert.equal(elicited.isError, false, elicited.content);
    assert.deepEqual(JSON.parse(elicited.content), { action: 'accept', content: { account: 'acme' } });
    const sampled = await tools.call('asker', { what: 'sample' }, { clientFeatures: features });
    assert.equal(JSON.parse(sampled.content).model, 'm');
    assert.deepEqual(seen[0]?.request, FORM);
    assert.deepEqual(seen[1]?.request, SAMPLE);
    assert.ok(seen.every((s) => s.signal instanceof AbortSignal && !s.signal.aborted));
    assert.deepEqual(logs, [
      ['info', { step: 'start' }, 'asker'],
      ['info', { step: 'start' }, 'asker'],
    ]);
  });

  test('without features: unsupported, naming the caller and what would work; log does nothing', async () => {
    const tools = new ToolSet([askingTool()]);
    const result = await tools.call('asker', { what: 'elicit' }, { caller: 'http:admin@127.0.0.1' });
    assert.equal(result.isError, true);
    assert.equal(result.error?.code, 'unsupported');
    assert.match(result.content, /the caller 'http:admin@127\.0\.0\.1' cannot answer an elicitation/);
    assert.match(result.content, /client that declared the elicitation capability/);
    const sampled = await tools.call('asker', { what: 'sample' });
    assert.equal(sampled.error?.code, 'unsupported');
    assert.match(sampled.content, /the caller of this call cannot sample its model/);
    assert.equal((await tools.call('asker', { what: 'log' })).content, 'logged');
  });

  test('a feature the caller lacks is unsupported even when it has others', async () => {
    const tools = new ToolSet([askingTool()]);
    const result = await tools.call(
      'asker',
      { what: 'sample' },
      { clientFeatures: { log: () => undefined } },
    );
    assert.equal(result.error?.code, 'unsupported');
  });

  test('cancelling the call aborts the question the caller is answering', async () => {
    let questionSignal: AbortSignal | undefined;
    const features: ToolClientFeatures = {
      elicit: (_request, { signal }) =>
        new Promise((_, reject) => {
          questionSignal = signal;
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        }),
    };
    const tools = new ToolSet([askingTool()]);
    const controller = new AbortController();
    const running = tools.call(
      'asker',
      { what: 'elicit' },
      { clientFeatures: features, signal: controller.signal },
    );
    for (let i = 0; i < 100 && questionSignal === undefined; i++) await new Promise((r) => setImmediate(r));
    assert.ok(questionSignal, 'the question was not asked');
    controller.abort();
    const result = await running;
    assert.equal(result.error?.code, 'cancelled');
    assert.equal(questionSignal.aborted, true);
  });

  test('a call that waits for a slot (an onCall hook) gets the features and the caller too', async () => {
    const tools = new ToolSet([askingTool()], { hooks: { onCall: () => undefined } });
    const missing = await tools.call('asker', { what: 'elicit' }, { caller: 'mcp:stdio' });
    assert.match(missing.content, /the caller 'mcp:stdio' cannot answer/);
    const answered = await tools.call(
      'asker',
      { what: 'elicit' },
      { clientFeatures: { elicit: async () => ({ action: 'decline' }) } },
    );
    assert.deepEqual(JSON.parse(answered.content), { action: 'decline' });
  });

  test('a tool that is not a BaseTool gets them in its runJson options', async () => {
    let options: RunJsonOptions | undefined;
    const tool: Tool = {
      name: 'raw',
      description: 'raw',
      schema: {
        name: 'raw',
        description: 'raw',
        parameters: { type: 'object', properties: {}, required: [], additionalProperties: false },
        strict: false,
      },
      runJson: async (_args, _signal, given) => {
        options = given;
        return 'ok';
      },
      returnValueAsString: (value) => String(value),
    };
    const features: ToolClientFeatures = { log: () => undefined };
    await new ToolSet([tool]).call('raw', {}, { clientFeatures: features, caller: 'agent' });
    assert.equal(options?.clientFeatures, features);
    assert.equal(options?.caller, 'agent');
  });

  test('a malformed request is a usage error; a throwing log channel is ignored', async () => {
    const bad = new FunctionTool(
      async (_args: Record<string, never>, ctx: ToolCallContext) => {
        ctx.log('info', 'fine');
        ctx.log('loud' as ToolLogLevel, 'not a level');
        return ctx.elicit({ message: 'no schema' } as unknown as ElicitationRequest);
      },
      { name: 'bad', description: 'bad', parameters: z.object({}) },
    );
    const logs: string[] = [];
    const result = await new ToolSet([bad]).call(
      'bad',
      {},
      {
        clientFeatures: {
          elicit: async () => ({ action: 'cancel' }),
          log: (level) => {
            logs.push(level);
            throw new Error('log channel down');
          },
        },
      },
    );
    assert.equal(result.error?.code, 'usage');
    assert.match(result.content, /ctx\.elicit takes \{ message: string, requestedSchema/);
    assert.deepEqual(logs, ['info']);
  });
});

describe('ctx.elicit through Tool.runJson', () => {
  test('RunJsonOptions.clientFeatures reach the tool with a plain AbortSignal', async () => {
    const tool = askingTool();
    const value = await tool.runJson({ what: 'elicit' }, new AbortController().signal, {
      clientFeatures: { elicit: async () => ({ action: 'accept', content: { account: 'x' } }) },
    });
    assert.deepEqual(JSON.parse(value as string), { action: 'accept', content: { account: 'x' } });
  });

  test('without them it rejects with unsupported', async () => {
    await assert.rejects(askingTool().runJson({ what: 'sample' }), (error: unknown) => {
      assert.ok(error instanceof ToolError);
      assert.equal(error.code, 'unsupported');
      assert.match(error.message, /cannot sample its model/);
      return true;
    });
  });

  test('an aborted signal rejects with cancelled before asking', async () => {
    let asked = false;
    const tool = new FunctionTool(
      async (_args: Record<string, never>, ctx: ToolCallContext) => {
        await new Promise((r) => setImmediate(r));
        return ctx.elicit(FORM).catch((error: unknown) => {
          assert.ok(isToolbusError(error));
          return error.code;
        });
      },
      { name: 'late', description: 'late', parameters: z.object({}) },
    );
    const controller = new AbortController();
    const running = tool.runJson(
      {},
      { signal: controller.signal },
      {
        clientFeatures: {
          elicit: async () => {
            asked = true;
            return { action: 'cancel' };
          },
        },
      },
    );
    controller.abort();
    await assert.rejects(running, (error: unknown) => isToolbusError(error) && error.code === 'cancelled');
    assert.equal(asked, false);
  });
});

describe('log levels', () => {
  test('eight levels in severity order', () => {
    assert.deepEqual(Object.values(ToolLogLevel), [
      'debug',
      'info',
      'notice',
      'warning',
      'error',
      'critical',
      'alert',
      'emergency',
    ]);
    assert.equal(isToolLogLevel('notice'), true);
    assert.equal(isToolLogLevel('trace'), false);
  });
});
