import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { z } from 'zod';
import { ToolbusError } from '../errors/index.js';
import { ToolError } from './errors.js';
import { FunctionTool } from './function-tool.js';
import type { Tool, ToolResult } from './tool.js';
import {
  DEFAULT_MAX_OUTPUT_BYTES,
  DEFAULT_TOOL_TIMEOUT_MS,
  ToolSet,
  type ToolCallEvent,
} from './tool-set.js';

/** A promise plus its resolver, for holding a tool in the middle of a call. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

const add = new FunctionTool(({ a, b }) => a + b, {
  name: 'add',
  description: 'Adds two numbers.',
  parameters: z.object({ a: z.number().describe('First'), b: z.number().describe('Second') }),
});
const fails = new FunctionTool(
  () => {
    throw new TypeError('disk on fire');
  },
  { name: 'fails', description: 'Always throws.', parameters: z.object({}) },
);

function assertError(result: ToolResult, code: string, ...fragments: string[]): void {
  assert.equal(result.isError, true);
  assert.ok(result.error instanceof ToolError, 'result.error is a ToolError');
  assert.equal(result.error.code, code);
  assert.equal(result.content, result.error.message);
  for (const fragment of fragments)
    assert.ok(result.content.includes(fragment), `${result.content} ∌ ${fragment}`);
}

describe('ToolSet basics', () => {
  test('defaults are exported', () => {
    assert.equal(DEFAULT_TOOL_TIMEOUT_MS, 60_000);
    assert.equal(DEFAULT_MAX_OUTPUT_BYTES, 65_536);
  });

  test('list, get, has and size', () => {
    const set = new ToolSet([add, fails]);
    assert.deepEqual(
      set.list().map((t) => t.name),
      ['add', 'fails'],
    );
    assert.equal(set.get('add'), add);
    assert.equal(set.get('nope'), undefined);
    assert.equal(set.size, 2);
  });

  test('calls with JSON text or an object; the call id is kept or generated', async () => {
    const set = new ToolSet([add]);
    assert.deepEqual(await set.call('add', '{"a": 1, "b": 2}', { callId: 'c1' }), {
      name: 'add',
      callId: 'c1',
      content: '3',
      isError: false,
      arguments: '{"a": 1, "b": 2}',
    });
    const generated = await set.call('add', { a: 2, b: 2 });
    assert.equal(generated.content, '4');
    assert.equal(generated.arguments, undefined, 'given as an object: nothing to replay');
    assert.match(generated.callId, /^[0-9a-f]{16}-[0-9a-z]+$/);
    const again = await set.call('add', { a: 2, b: 2 });
    assert.notEqual(again.callId, generated.callId, 'every generated id is new');
    const other = await new ToolSet([add]).call('add', { a: 2, b: 2 });
    assert.notEqual(
      other.callId.split('-')[0],
      generated.callId.split('-')[0],
      'each set has its own prefix',
    );
  });

  test('result.arguments is the text to replay: set once it is a JSON object, even for an unknown tool or a failed call', async () => {
    const set = new ToolSet([add]);
    assert.equal((await set.call('add', '{"a": "x", "b": 1}')).arguments, '{"a": "x", "b": 1}');
    assert.equal((await set.call('nope', '{"a": 1}')).arguments, '{"a": 1}');
    const broken = await set.call('nope', '{"a": 1,');
    assert.equal(broken.error?.code, 'unknown-tool', 'the unknown tool is reported before broken JSON');
    assert.equal(broken.arguments, undefined);
    assert.equal((await set.call('add', '[1]')).arguments, undefined);
    const deep = await set.call('add', '['.repeat(10_000) + ']'.repeat(10_000));
    assert.equal(deep.error?.code, 'invalid-arguments');
    assert.match(deep.content, /deeper than 512 levels/);
  });

  test('empty argument text counts as {} for a tool without parameters', async () => {
    const hello = new FunctionTool(() => 'hi', {
      name: 'hello',
      description: 'Hi.',
      parameters: z.object({}),
    });
    assert.equal((await new ToolSet([hello]).call('hello', '')).content, 'hi');
  });

  test('empty argument text gives the tool the same fresh, writable object as "{}"', async () => {
    // Raw JSON Schema: the validated value is the parsed object itself, so the tool sees what parsing gave.
    const tool = new FunctionTool(
      (args: Record<string, unknown>) => {
        args['limit'] ??= 10;
        return args;
      },
      { name: 'list', description: 'Lists.', parameters: { type: 'object', properties: {} } },
    );
    const set = new ToolSet([tool]);
    assert.equal((await set.call('list', '{}')).content, '{"limit":10}');
    const empty = await set.call('list', '');
    assert.equal(empty.isError, false, empty.content);
    assert.equal(empty.content, '{"limit":10}');
  });

  test('duplicate names are refused clearly', () => {
    assert.throws(
      () => new ToolSet([add, add]),
      (e: unknown) =>
        e instanceof ToolbusError &&
        e.code === 'invalid-name' &&
        e.message.includes("duplicate tool name 'add'"),
    );
  });

  test('bad options are refused', () => {
    assert.throws(
      () => new ToolSet([], { concurrency: 0 }),
      (e: unknown) => e instanceof ToolbusError && e.code === 'usage',
    );
  });
});

describe('ToolSet error contract: every failure is a result, never a rejection', () => {
  const set = new ToolSet([add, fails]);

  test('invalid JSON: position and excerpt', async () => {
    assertError(
      await set.call('add', '{"a": 1, "b": }'),
      'invalid-arguments',
      'not valid JSON',
      'position 14',
      String.raw`near "{\"a\": 1, \"b\": }"`,
    );
  });

  test('argument text starting with a UTF-8 byte order mark is accepted, as without it', async () => {
    const result = await set.call('add', '\uFEFF{"a": 1, "b": 2}');
    assert.equal(result.isError, false, result.content);
    assert.equal(result.content, '3');
    // An error after the mark is still found where it is.
    assertError(await set.call('add', '\uFEFF{"a": 1, "b": }'), 'invalid-arguments', 'position 14');
  });

  test('truncated JSON', async () => {
    assertError(
      await set.call('add', '{"a": 1'),
      'invalid-arguments',
      'not valid JSON',
      'at the end (position 7)',
    );
  });

  test('JSON that is not an object', async () => {
    assertError(await set.call('add', '[1, 2]'), 'invalid-arguments', 'must be a JSON object, got an array');
  });

  test('validation failure: each path, expected and received', async () => {
    assertError(
      await set.call('add', '{"a": "one"}'),
      'invalid-arguments',
      "argument 'a' must be a number, got string",
      "argument 'b' is required",
    );
  });

  test('unknown tool: lists the available names', async () => {
    assertError(await set.call('sub', '{}'), 'unknown-tool', "unknown tool 'sub'", "'add', 'fails'");
  });

  test('thrown error: tool-error with the message and cause', async () => {
    const result = await set.call('fails', '{}');
    assertError(result, 'tool-error', "tool 'fails' failed: disk on fire");
    assert.ok(result.error?.cause instanceof TypeError);
  });

  test('timeout: code timeout, timeoutMs in the message, and the tool signal is aborted so work stops', async () => {
    let aborted = false;
    const slow = new FunctionTool(
      (_args, { signal }) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener('abort', () => {
            aborted = true;
            reject(signal.reason);
          });
        }),
      { name: 'slow', description: 'Never finishes alone.', parameters: z.object({}) },
    );
    const result = await new ToolSet([slow]).call('slow', '{}', { timeoutMs: 20 });
    assertError(result, 'timeout', "tool 'slow' timed out after 20 ms");
    assert.equal(aborted, true);
  });

  test("a tool's own timeoutMs replaces the set's default; a call's timeoutMs still wins", async () => {
    class PatientTool extends FunctionTool<z.ZodObject<{ ms: z.ZodNumber }>> {
      readonly timeoutMs = 25;
    }
    const patient = new PatientTool(({ ms }) => new Promise((r) => setTimeout(() => r('done'), ms)), {
      name: 'patient',
      description: 'Waits.',
      parameters: z.object({ ms: z.number() }),
    });
    const tools = new ToolSet([patient], { timeoutMs: 10_000 });
    assertError(await tools.call('patient', { ms: 5_000 }), 'timeout', 'after 25 ms');
    const overridden = await tools.call('patient', { ms: 40 }, { timeoutMs: 5_000 });
    assert.equal(overridden.isError, false);
    assert.equal(overridden.content, 'done');
  });

  test("a timeout beyond setTimeout's maximum (about 24.8 days) does not fire at once", async () => {
    const wait = new FunctionTool(() => new Promise((r) => setTimeout(() => r('done'), 30)), {
      name: 'wait',
      description: 'Waits 30 ms.',
      parameters: z.object({}),
    });
    const result = await new ToolSet([wait]).call('wait', '{}', { timeoutMs: 3_000_000_000 });
    assert.deepEqual([result.isError, result.content], [false, 'done']);
  });

  test('timeout also returns when the tool ignores its signal', async () => {
    const stuck = new FunctionTool(() => new Promise(() => {}), {
      name: 'stuck',
      description: 'Ignores cancellation.',
      parameters: z.object({}),
    });
    assertError(await new ToolSet([stuck], { timeoutMs: 15 }).call('stuck', '{}'), 'timeout', 'after 15 ms');
  });

  test('cancellation in the middle of a call', async () => {
    const started = gate();
    let aborted = false;
    const waits = new FunctionTool(
      (_args, { signal }) =>
        new Promise((_resolve, reject) => {
          started.open();
          signal.addEventListener('abort', () => {
            aborted = true;
            reject(new Error('stopped'));
          });
        }),
      { name: 'waits', description: 'Waits.', parameters: z.object({}) },
    );
    const controller = new AbortController();
    const tools = new ToolSet([waits]);
    const pending = tools.call('waits', '{}', { signal: controller.signal });
    await started.promise;
    controller.abort();
    const result = await pending;
    assertError(result, 'cancelled', "tool 'waits' was cancelled");
    assert.equal(aborted, true);
    // One finally cleaned everything up.
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
    assert.equal(tools.active, 0);
  });

  test('a call whose signal is already aborted does not run', async () => {
    let ran = false;
    const tool = new FunctionTool(
      () => {
        ran = true;
      },
      { name: 'noop', description: 'x', parameters: z.object({}) },
    );
    const result = await new ToolSet([tool]).call('noop', '{}', { signal: AbortSignal.abort() });
    assertError(result, 'cancelled');
    assert.equal(ran, false);
  });

  test('output over the cap keeps head and tail with a notice of what was cut', async () => {
    const text = 'HEAD' + 'x'.repeat(10_000) + 'é'.repeat(1000) + 'TAIL';
    const big = new FunctionTool(() => text, { name: 'big', description: 'x', parameters: z.object({}) });
    const result = await new ToolSet([big], { maxOutputBytes: 1024 }).call('big', '{}');
    assert.equal(result.isError, false);
    assert.ok(Buffer.byteLength(result.content) <= 1024);
    assert.ok(result.content.startsWith('HEADxxx'));
    assert.ok(result.content.endsWith('éééTAIL'));
    const total = Buffer.byteLength(text);
    assert.ok(result.truncatedBytes !== undefined && result.truncatedBytes > 0);
    assert.ok(result.content.includes(`${result.truncatedBytes} of ${total} bytes cut`));
    assert.ok(!result.content.includes('\uFFFD'), 'cuts fall on character boundaries');
    // Head + tail + notice account for every byte kept.
    const kept = Buffer.byteLength(result.content.replace(/\n\n\[\.\.\. .* \.\.\.\]\n\n/, ''));
    assert.equal(kept + result.truncatedBytes, total);
  });

  test('output under the cap is untouched', async () => {
    const result = await new ToolSet([add], { maxOutputBytes: 1024 }).call('add', { a: 1, b: 1 });
    assert.equal(result.truncatedBytes, undefined);
  });
});

describe('ToolSet concurrency cap', () => {
  test('calls over the cap wait in FIFO order, and at most `concurrency` run at once', async () => {
    const gates = new Map<number, ReturnType<typeof gate>>();
    const startedOrder: number[] = [];
    let running = 0;
    let maxRunning = 0;
    const job = new FunctionTool(
      async ({ id }) => {
        startedOrder.push(id);
        running++;
        maxRunning = Math.max(maxRunning, running);
        await gates.get(id)?.promise;
        running--;
        return id;
      },
      { name: 'job', description: 'x', parameters: z.object({ id: z.number() }) },
    );
    const set = new ToolSet([job], { concurrency: 2 });
    for (let id = 0; id < 5; id++) gates.set(id, gate());
    const pending = [0, 1, 2, 3, 4].map((id) => set.call('job', { id }));
    await new Promise((r) => setImmediate(r));
    assert.equal(set.active, 2);
    assert.equal(set.waiting, 3);
    for (const id of [1, 0, 2, 3, 4]) {
      gates.get(id)?.open();
      await new Promise((r) => setImmediate(r));
    }
    const results = await Promise.all(pending);
    assert.deepEqual(
      results.map((r) => r.content),
      ['0', '1', '2', '3', '4'],
    );
    assert.equal(maxRunning, 2);
    assert.deepEqual(startedOrder, [0, 1, 2, 3, 4]);
    assert.equal(set.active, 0);
  });

  test('a call waiting for a slot can be cancelled, and it leaves the queue', async () => {
    const hold = gate();
    const job = new FunctionTool(
      async () => {
        await hold.promise;
        return 'done';
      },
      { name: 'job', description: 'x', parameters: z.object({}) },
    );
    const set = new ToolSet([job], { concurrency: 1 });
    const first = set.call('job', {});
    const controller = new AbortController();
    const second = set.call('job', {}, { signal: controller.signal });
    const third = set.call('job', {});
    await new Promise((r) => setImmediate(r));
    assert.equal(set.waiting, 2);
    controller.abort();
    assertError(await second, 'cancelled');
    assert.equal(set.waiting, 1);
    hold.open();
    assert.equal((await first).content, 'done');
    assert.equal((await third).content, 'done');
  });

  test('a call that times out while queued returns timeout', async () => {
    const hold = gate();
    const job = new FunctionTool(() => hold.promise.then(() => 'ok'), {
      name: 'job',
      description: 'x',
      parameters: z.object({}),
    });
    const set = new ToolSet([job], { concurrency: 1 });
    const first = set.call('job', {});
    assertError(await set.call('job', {}, { timeoutMs: 10 }), 'timeout', 'after 10 ms');
    hold.open();
    assert.equal((await first).content, 'ok');
    assert.equal(set.waiting, 0);
  });
});

describe('ToolSet hooks', () => {
  test('onCall, onResult and onError run in order with one context object', async () => {
    const seen: string[] = [];
    let lastEvent: ToolCallEvent | undefined;
    const set = new ToolSet([add, fails], {
      hooks: {
        onCall: [
          (e) => {
            seen.push(`call1:${e.name}`);
            lastEvent = e;
          },
          async (e) => {
            seen.push(`call2:${e.name}`);
          },
        ],
        onResult: (e) => {
          seen.push(`result:${e.name}:${e.result.isError}`);
        },
        onError: (e) => {
          seen.push(`error:${e.name}:${e.result.error?.code}`);
        },
      },
    });
    await set.call('add', '{"a":1,"b":2}', { callId: 'x', user: 'alice' });
    await set.call('fails', '{}');
    await set.call('missing', '{}');
    assert.deepEqual(seen, [
      'call1:add',
      'call2:add',
      'result:add:false',
      'call1:fails',
      'call2:fails',
      'result:fails:true',
      'error:fails:tool-error',
      'result:missing:true',
      'error:missing:unknown-tool',
    ]);
    assert.deepEqual(lastEvent?.arguments, {});
    assert.equal(lastEvent?.tool, fails);
  });

  test('an onCall hook that throws vetoes the call; an onResult hook that throws changes nothing', async () => {
    let ran = false;
    const tool = new FunctionTool(
      () => {
        ran = true;
        return 'ran';
      },
      { name: 'guarded', description: 'x', parameters: z.object({}) },
    );
    const vetoed = new ToolSet([tool], {
      hooks: {
        onCall: () => {
          throw new ToolError('invalid-arguments', 'policy: not allowed for this user');
        },
      },
    });
    assertError(await vetoed.call('guarded', '{}'), 'invalid-arguments', 'policy: not allowed');
    assert.equal(ran, false);
    const observed = new ToolSet([tool], {
      hooks: {
        onResult: () => {
          throw new Error('observer broke');
        },
      },
    });
    assert.equal((await observed.call('guarded', '{}')).content, 'ran');
  });

  test('an onCall hook that never settles still yields to cancel and to the timeout', async () => {
    let ran = false;
    const tool = new FunctionTool(
      () => {
        ran = true;
        return 'ran';
      },
      { name: 'guarded', description: 'x', parameters: z.object({}) },
    );
    const pending = gate();
    const tools = new ToolSet([tool], { hooks: { onCall: () => pending.promise } });
    const controller = new AbortController();
    const cancelledCall = tools.call('guarded', '{}', { signal: controller.signal });
    setTimeout(() => controller.abort(), 5);
    assertError(await cancelledCall, 'cancelled');
    assertError(await tools.call('guarded', '{}', { timeoutMs: 10 }), 'timeout', 'timed out after 10 ms');
    assert.equal(tools.active, 0, 'the slots are released');
    pending.open();
    assert.equal(ran, false);
  });
});

describe('ToolSet with a strict-mode model', () => {
  test('nulls sent for optional properties are treated as absent (defaults apply)', async () => {
    const search = new FunctionTool(({ query, limit, lang }) => ({ query, limit, lang: lang ?? 'any' }), {
      name: 'search',
      description: 'Search.',
      parameters: z.object({
        query: z.string(),
        limit: z.number().default(10),
        lang: z.string().optional(),
      }),
      strict: true,
    });
    const set = new ToolSet([search]);
    assert.deepEqual(search.schemaFor('openai-strict').parameters.required, ['query', 'limit', 'lang']);
    const result = await set.call('search', '{"query": "toolbus", "limit": null, "lang": null}');
    assert.equal(result.isError, false);
    assert.deepEqual(JSON.parse(result.content), { query: 'toolbus', limit: 10, lang: 'any' });
  });

  test('a record sent as strict-mode { key, value } entries reaches the tool as an object', async () => {
    const score = new FunctionTool(
      ({ scores }) =>
        Object.entries(scores)
          .map(([k, v]) => `${k}=${v}`)
          .join(','),
      {
        name: 'score',
        description: 'Scores.',
        parameters: z.object({ scores: z.record(z.string(), z.number()).describe('Scores by name') }),
        strict: true,
      },
    );
    assert.equal(
      (score.schemaFor('openai-strict').parameters.properties.scores as { type: string }).type,
      'array',
    );
    const set = new ToolSet([score]);
    const strictForm = await set.call(
      'score',
      '{"scores": [{"key": "ann", "value": 3}, {"key": "bo", "value": 5}]}',
    );
    assert.deepEqual([strictForm.isError, strictForm.content], [false, 'ann=3,bo=5']);
    const plain = await set.call('score', { scores: { ann: 1 } });
    assert.deepEqual([plain.isError, plain.content], [false, 'ann=1']);
    const wrong = await set.call('score', '{"scores": [{"key": "ann", "value": "x"}]}');
    assertError(wrong, 'invalid-arguments', 'ann');
  });
});

describe('ToolSet deadlines under fake timers', () => {
  test('a timeout fires when mocked time passes, not before', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const stuck = new FunctionTool(() => new Promise(() => {}), {
      name: 'stuck',
      description: 'Never settles.',
      parameters: z.object({}),
    });
    const set = new ToolSet([stuck], { timeoutMs: 1_000 });
    let settled: ToolResult | undefined;
    void set.call('stuck', '{}').then((r) => (settled = r));
    await new Promise((r) => setImmediate(r));
    t.mock.timers.tick(999);
    await new Promise((r) => setImmediate(r));
    assert.equal(settled, undefined);
    t.mock.timers.tick(2);
    await new Promise((r) => setImmediate(r));
    assert.equal((settled as ToolResult | undefined)?.error?.code, 'timeout');
  });
});

describe('ToolSet deadline budget', () => {
  /** A tool that reports the deadline its context carries. */
  const deadlineOf = new FunctionTool(async (_args: Record<string, never>, ctx) => String(ctx?.deadline), {
    name: 'deadline_of',
    description: 'Says its deadline.',
    parameters: z.object({}),
  });

  test("the tool's context carries the call's deadline: the earlier of the caller's and the timeout's", async () => {
    const set = new ToolSet([deadlineOf], { timeoutMs: 10_000 });
    const before = Date.now();
    const own = Number((await set.call('deadline_of', '{}')).content);
    assert.ok(own >= before + 10_000 && own <= Date.now() + 10_000, 'now + timeoutMs');
    const sooner = before + 500;
    assert.equal((await set.call('deadline_of', '{}', { deadline: sooner })).content, String(sooner));
    const later = Date.now() + 60_000;
    assert.ok(Number((await set.call('deadline_of', '{}', { deadline: later })).content) < later);
  });

  test('no timeout and no caller deadline: the context has no deadline', async () => {
    const set = new ToolSet([deadlineOf], { timeoutMs: Number.POSITIVE_INFINITY });
    assert.equal((await set.call('deadline_of', '{}')).content, 'undefined');
    const deadline = Date.now() + 1_000;
    assert.equal((await set.call('deadline_of', '{}', { deadline })).content, String(deadline));
  });

  test("a caller deadline ends the call with 'timeout' before the call's own timeout", async () => {
    const stuck = new FunctionTool(() => new Promise(() => {}), {
      name: 'stuck',
      description: 'Never settles.',
      parameters: z.object({}),
    });
    const set = new ToolSet([stuck], { timeoutMs: 60_000 });
    const result = await set.call('stuck', '{}', { deadline: Date.now() + 30 });
    assertError(result, 'timeout', "tool 'stuck' timed out");
  });
});

describe('ToolSet call paths: the same contract whichever way a tool is run', () => {
  /** A `Tool` that is not a BaseTool: its own runJson, no validation. */
  function plainTool(name: string, runJson: Tool['runJson']): Tool {
    return {
      name,
      description: 'A plain Tool.',
      schema: {
        name,
        description: 'A plain Tool.',
        parameters: { type: 'object', properties: {}, required: [], additionalProperties: false },
        strict: false,
      },
      runJson,
      returnValueAsString: (value) => (typeof value === 'string' ? value : JSON.stringify(value)),
    };
  }

  test('a plain Tool: its value, its ToolError kept, another toolbus error keeping its code, a timeout', async () => {
    const set = new ToolSet(
      [
        plainTool('ok', async (args) => ({ echo: args })),
        plainTool('unavailable', () => Promise.reject(new ToolbusError('unavailable', 'no service'))),
        plainTool('stuck', () => new Promise(() => {})),
        plainTool('throws', () => {
          throw new TypeError('sync throw');
        }),
      ],
      { timeoutMs: 20 },
    );
    assert.equal((await set.call('ok', '{"x":1}')).content, '{"echo":{"x":1}}');
    assertError(await set.call('unavailable', '{}'), 'unavailable', 'no service');
    assertError(await set.call('stuck', '{}'), 'timeout', 'after 20 ms');
    assertError(await set.call('throws', '{}'), 'tool-error', "tool 'throws' failed: sync throw");
    assert.equal(set.active, 0);
  });

  test('a wrapper Tool around a FunctionTool that ignores its signal still times out, with the slot freed', async () => {
    const inner = new FunctionTool(() => new Promise(() => {}), {
      name: 'inner',
      description: 'Never settles.',
      parameters: z.object({}),
    });
    const wrapper = plainTool('wrapper', (args, signal, options) => inner.runJson(args, signal, options));
    const set = new ToolSet([wrapper], { timeoutMs: 20 });
    assertError(await set.call('wrapper', '{}'), 'timeout', "tool 'wrapper' timed out after 20 ms");
    assert.equal(set.active, 0);
  });

  test('a BaseTool that overrides runJson is called through its override', async () => {
    class Audited extends FunctionTool<z.ZodObject<{ n: z.ZodNumber }>> {
      readonly seen: unknown[] = [];
      override runJson(...args: Parameters<FunctionTool['runJson']>): Promise<unknown> {
        this.seen.push(args[0]);
        return super.runJson(...args).then((value) => `audited ${String(value)}`);
      }
    }
    const audited = new Audited(({ n }) => n * 2, {
      name: 'audited',
      description: 'Doubles, audited.',
      parameters: z.object({ n: z.number() }),
    });
    const result = await new ToolSet([audited]).call('audited', '{"n":21}');
    assert.equal(result.content, 'audited 42');
    assert.deepEqual(audited.seen, [{ n: 21 }]);
  });

  test('a function tool that throws a toolbus error other than a ToolError fails with tool-error, as runJson does', async () => {
    const tool = new FunctionTool(
      () => {
        throw new ToolbusError('unavailable', 'backend down');
      },
      { name: 'backend', description: 'Fails.', parameters: z.object({}) },
    );
    const later = new FunctionTool(
      async () => {
        await Promise.resolve();
        throw new ToolbusError('unavailable', 'backend down later');
      },
      { name: 'later', description: 'Fails later.', parameters: z.object({}) },
    );
    const direct = await tool.runJson({}).catch((error: unknown) => error);
    assert.ok(direct instanceof ToolError);
    assert.equal(direct.code, 'tool-error');
    const set = new ToolSet([tool, later]);
    assertError(await set.call('backend', '{}'), 'tool-error', "tool 'backend' failed: backend down");
    assertError(await set.call('later', '{}'), 'tool-error', "tool 'later' failed: backend down later");
  });

  test("the caller's signal aborted while the tool's synchronous part runs: cancelled, and the tool's late value is dropped", async () => {
    const controller = new AbortController();
    const aborts = new FunctionTool(
      () => {
        controller.abort();
        return Promise.resolve('too late');
      },
      { name: 'aborts', description: 'Aborts its caller.', parameters: z.object({}) },
    );
    const set = new ToolSet([aborts]);
    assertError(await set.call('aborts', '{}', { signal: controller.signal }), 'cancelled');
    assert.equal(set.active, 0);
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
  });

  test('an asynchronous refinement validates, rejects, and yields to a cancel while it runs', async () => {
    const validating = gate();
    const checked = new FunctionTool(({ n }) => n + 1, {
      name: 'checked',
      description: 'Adds one to an allowed number.',
      parameters: z.object({ n: z.number() }).refine(async ({ n }) => {
        if (n === 0) await validating.promise;
        return n > 0 || n === 0;
      }, 'n must not be negative'),
    });
    const set = new ToolSet([checked]);
    assert.equal((await set.call('checked', '{"n":1}')).content, '2');
    assertError(await set.call('checked', '{"n":-1}'), 'invalid-arguments', 'n must not be negative');
    const controller = new AbortController();
    const pending = set.call('checked', '{"n":0}', { signal: controller.signal });
    controller.abort();
    assertError(await pending, 'cancelled');
    validating.open();
    assert.equal(set.active, 0);
  });

  test('a synchronous function tool gives its result with the slot already free, and a tool may write ctx.deadline', async () => {
    const writes = new FunctionTool(
      (_args: Record<string, never>, ctx) => {
        ctx.deadline = 42;
        return String(ctx.deadline);
      },
      { name: 'writes', description: 'Writes its deadline.', parameters: z.object({}) },
    );
    const set = new ToolSet([writes]);
    assert.equal((await set.call('writes', '{}')).content, '42');
    assert.equal(set.active, 0);
  });
});
