/**
 * OpenAIChatCompletionClient against a real HTTP server speaking the OpenAI wire format (JSON and SSE).
 */
import { describe, test } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { FunctionTool } from '../../src/tools/index.js';
import { ToolbusError } from '../../src/errors/index.js';
import type { ToolSchema } from '../../src/tools/index.js';
import {
  AssistantMessage,
  FunctionExecutionResult,
  FunctionExecutionResultMessage,
  ModelError,
  UserMessage,
  isFunctionCalls,
} from '../../src/models/index.js';
import type { CreateResult } from '../../src/models/index.js';
import { OpenAIChatCompletionClient } from '../../src/models/openai/index.js';
import type { ModelRetryEvent, OpenAIChatCompletionClientOptions } from '../../src/models/openai/index.js';
import {
  chatCompletion,
  chunk,
  errorBody,
  startFakeOpenAIServer,
  textStream,
} from '../fixtures/fake-openai-server.js';
import type { FakeOpenAIServer } from '../fixtures/fake-openai-server.js';

async function setup(
  t: TestContext,
  options: Partial<OpenAIChatCompletionClientOptions> = {},
): Promise<{ server: FakeOpenAIServer; client: OpenAIChatCompletionClient; retries: ModelRetryEvent[] }> {
  const server = await startFakeOpenAIServer();
  t.after(() => server.close());
  const retries: ModelRetryEvent[] = [];
  const client = new OpenAIChatCompletionClient({
    model: 'gpt-4o',
    baseURL: server.baseURL,
    apiKey: 'sk-test',
    retryBaseDelayMs: 1,
    onRetry: (e) => retries.push(e),
    ...options,
  });
  t.after(() => client.close());
  return { server, client, retries };
}

function stockPriceTool(): FunctionTool {
  return new FunctionTool(async (_args: { ticker: string; date: string }) => 32.381250753393104, {
    name: 'get_stock_price',
    description: 'Get the stock price.',
    parameters: z.object({
      ticker: z.string().describe('ticker'),
      date: z.string().describe('Date in YYYY/MM/DD'),
    }),
  });
}

const question = () =>
  new UserMessage({ content: 'What is the stock price of AAPL on 2021/01/01?', source: 'user' });

async function collect(stream: AsyncIterable<string | CreateResult>): Promise<(string | CreateResult)[]> {
  const out: (string | CreateResult)[] = [];
  for await (const item of stream) out.push(item);
  return out;
}

function rejectsWith(code: string, fragment: RegExp) {
  return (e: unknown): boolean => {
    assert.ok(e instanceof ToolbusError, `expected a ToolbusError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    assert.match(e.message, fragment);
    return true;
  };
}

describe('OpenAIChatCompletionClient: JSON responses', () => {
  test('sends the messages and returns text, finish reason and usage', async (t) => {
    const { server, client } = await setup(t);
    server.reply({
      json: chatCompletion({ content: 'Hello!', usage: { prompt_tokens: 9, completion_tokens: 2 } }),
    });
    const result = await client.create([new UserMessage({ content: 'Hi' })]);
    assert.deepEqual(result, {
      content: 'Hello!',
      finishReason: 'stop',
      usage: { promptTokens: 9, completionTokens: 2 },
    });
    assert.deepEqual(client.totalUsage(), { promptTokens: 9, completionTokens: 2 });
    const request = server.requests[0];
    assert.equal(request?.path, '/v1/chat/completions');
    assert.equal(request?.headers.authorization, 'Bearer sk-test');
    assert.deepEqual(request?.body, { model: 'gpt-4o', messages: [{ role: 'user', content: 'Hi' }] });
  });

  test("the seed's stock-price example: a tool call, then the reflection with the results message", async (t) => {
    const { server, client } = await setup(t);
    const tool = stockPriceTool();
    const callId = 'call_tpJ5J1Xoxi84Sw4v0scH0qBM';
    const args = '{"ticker":"AAPL","date":"2021/01/01"}';
    server.reply(
      {
        json: chatCompletion({
          toolCalls: [{ id: callId, name: 'get_stock_price', arguments: args }],
          usage: { prompt_tokens: 60, completion_tokens: 20 },
        }),
      },
      {
        json: chatCompletion({
          content: 'The stock price of AAPL (Apple Inc.) on January 1, 2021, was approximately $32.38.',
          usage: { prompt_tokens: 90, completion_tokens: 21 },
        }),
      },
    );

    const userMessage = question();
    let createResult = await client.create([userMessage], { tools: [tool] });
    assert.ok(isFunctionCalls(createResult.content));
    assert.deepEqual(createResult.content, [{ id: callId, name: 'get_stock_price', arguments: args }]);
    assert.equal(createResult.finishReason, 'function_calls');
    assert.deepEqual(server.requests[0]?.body, {
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'What is the stock price of AAPL on 2021/01/01?' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_stock_price',
            description: 'Get the stock price.',
            parameters: tool.schema.parameters,
          },
        },
      ],
    });

    const call = createResult.content[0];
    assert.ok(call);
    const toolResult = await tool.runJson(JSON.parse(call.arguments));
    const toolResultStr = tool.returnValueAsString(toolResult);
    const execResult = new FunctionExecutionResult({
      callId: call.id,
      content: toolResultStr,
      isError: false,
      name: tool.name,
    });
    const messages = [
      userMessage,
      new AssistantMessage({ content: createResult.content, source: 'assistant' }),
      new FunctionExecutionResultMessage({ content: [execResult] }),
    ];
    createResult = await client.create(messages);
    assert.equal(
      createResult.content,
      'The stock price of AAPL (Apple Inc.) on January 1, 2021, was approximately $32.38.',
    );
    assert.deepEqual(server.requests[1]?.body, {
      model: 'gpt-4o',
      messages: [
        { role: 'user', content: 'What is the stock price of AAPL on 2021/01/01?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: callId, type: 'function', function: { name: 'get_stock_price', arguments: args } },
          ],
        },
        { role: 'tool', tool_call_id: callId, content: '32.381250753393104' },
      ],
    });
    assert.deepEqual(client.totalUsage(), { promptTokens: 150, completionTokens: 41 });
  });

  test('a strict tool goes out through the openai-strict profile; foreign names are mapped both ways', async (t) => {
    const { server, client } = await setup(t);
    const strictTool = new FunctionTool(async () => 'ok', {
      name: 'search',
      description: 'Search.',
      strict: true,
      parameters: z.object({ query: z.string(), limit: z.number().optional() }),
    });
    const foreign: ToolSchema = {
      name: 'files.read/text',
      description: 'Read a file.',
      parameters: {
        type: 'object',
        properties: { path: { type: 'string' } },
        required: ['path'],
        additionalProperties: false,
      },
      strict: false,
    };
    server.reply(
      {
        json: chatCompletion({
          content: 'Reading it.',
          toolCalls: [{ id: 'c1', name: 'files--2e-read--2f-text', arguments: '{"path":"/a"}' }],
        }),
      },
      { json: chatCompletion({ content: 'done' }) },
    );
    const first = await client.create([question()], { tools: [strictTool, foreign] });
    assert.deepEqual(first.content, [{ id: 'c1', name: 'files.read/text', arguments: '{"path":"/a"}' }]);
    assert.equal(first.thought, 'Reading it.');

    const tools = server.requests[0]?.body?.tools as { function: Record<string, unknown> }[];
    assert.equal(tools[0]?.function.strict, true);
    const strictParams = tools[0]?.function.parameters as {
      required: string[];
      properties: Record<string, unknown>;
    };
    assert.deepEqual([...strictParams.required].sort(), ['limit', 'query']);
    assert.deepEqual(strictParams.properties.limit, { type: ['number', 'null'] });
    assert.equal(tools[1]?.function.name, 'files--2e-read--2f-text');
    assert.equal('strict' in (tools[1]?.function ?? {}), false);

    await client.create(
      [question(), new AssistantMessage({ content: first.content as never, thought: first.thought })],
      { tools: [foreign] },
    );
    const history = server.requests[1]?.body?.messages as Record<string, unknown>[];
    assert.deepEqual(history[1], {
      role: 'assistant',
      content: 'Reading it.',
      tool_calls: [
        {
          id: 'c1',
          type: 'function',
          function: { name: 'files--2e-read--2f-text', arguments: '{"path":"/a"}' },
        },
      ],
    });
  });

  test('toolChoice auto/required/none/named and parallel_tool_calls reach the wire', async (t) => {
    const { server, client } = await setup(t, { parallelToolCalls: false });
    const tool = stockPriceTool();
    for (let i = 0; i < 4; i++) server.reply({ json: chatCompletion({ content: 'ok' }) });
    await client.create([question()], { tools: [tool], toolChoice: 'auto' });
    await client.create([question()], { tools: [tool], toolChoice: 'required' });
    await client.create([question()], { tools: [tool], toolChoice: 'none' });
    await client.create([question()], { tools: [tool], toolChoice: { name: 'get_stock_price' } });
    assert.deepEqual(
      server.requests.map((r) => r.body?.tool_choice),
      ['auto', 'required', 'none', { type: 'function', function: { name: 'get_stock_price' } }],
    );
    assert.ok(server.requests.every((r) => r.body?.parallel_tool_calls === false));

    await assert.rejects(
      client.create([question()], { tools: [tool], toolChoice: { name: 'nope' } }),
      rejectsWith('invalid-arguments', /toolChoice names tool 'nope'.*'get_stock_price'/),
    );
    assert.equal(server.requests.length, 4);
  });

  test('a 200 without choices (an error body) is a model-error quoting the provider, not an empty answer', async (t) => {
    const { server, client } = await setup(t);
    server.reply({ json: { error: { message: 'upstream model overloaded', code: 503 } } });
    server.reply({ json: { id: 'x', object: 'chat.completion', created: 0, model: 'gpt-4o', choices: [] } });
    await assert.rejects(
      client.create([question()]),
      rejectsWith('model-error', /has no choices; the provider said: upstream model overloaded/),
    );
    await assert.rejects(client.create([question()]), rejectsWith('model-error', /has no choices; expected/));
    assert.deepEqual(client.totalUsage(), { promptTokens: 0, completionTokens: 0 });
  });

  test('maxTokens goes to OpenAI as max_completion_tokens (its reasoning models reject max_tokens), elsewhere as max_tokens', async (t) => {
    const { server, client: local } = await setup(t, { maxTokens: 50 });
    // OpenAI itself, reached through a fetch that sends its requests to the local server.
    const openai = new OpenAIChatCompletionClient({
      model: 'o3-mini',
      baseURL: 'https://api.openai.com/v1',
      apiKey: 'sk-test',
      maxTokens: 60,
      fetch: (input, init) =>
        fetch(
          String(input instanceof Request ? input.url : input).replace(
            'https://api.openai.com/v1',
            server.baseURL,
          ),
          init,
        ),
    });
    t.after(() => openai.close());
    server.reply({ json: chatCompletion({ content: 'a' }) }, { json: chatCompletion({ content: 'b' }) });
    await local.create([question()]);
    await openai.create([question()]);
    assert.equal(server.requests[0]?.body?.max_tokens, 50);
    assert.equal(server.requests[0]?.body?.max_completion_tokens, undefined);
    assert.equal(server.requests[1]?.body?.max_completion_tokens, 60);
    assert.equal(server.requests[1]?.body?.max_tokens, undefined);
  });

  test('jsonOutput asks for a JSON object', async (t) => {
    const { server, client } = await setup(t);
    server.reply({ json: chatCompletion({ content: '{"a":1}' }) });
    await client.create([question()], { jsonOutput: true });
    assert.deepEqual(server.requests[0]?.body?.response_format, { type: 'json_object' });
  });

  test('reasoning text and <think> blocks go to thought, not content', async (t) => {
    const { server, client } = await setup(t);
    server.reply(
      { json: chatCompletion({ content: '<think>Check the date.</think>\n\nIt was $32.38.' }) },
      { json: chatCompletion({ content: 'Yes.', reasoningContent: 'Simple.' }) },
    );
    const a = await client.create([question()]);
    assert.equal(a.content, 'It was $32.38.');
    assert.equal(a.thought, 'Check the date.');
    const b = await client.create([question()]);
    assert.equal(b.content, 'Yes.');
    assert.equal(b.thought, 'Simple.');
  });
});

describe('OpenAIChatCompletionClient: streaming', () => {
  test('yields text chunks, then the result with the usage of the last chunk', async (t) => {
    const { server, client } = await setup(t);
    server.reply({
      sse: textStream(['The stock ', 'price was ', '$32.38.'], { prompt_tokens: 12, completion_tokens: 7 }),
    });
    const items = await collect(client.createStream([question()]));
    assert.deepEqual(items.slice(0, -1), ['The stock ', 'price was ', '$32.38.']);
    assert.deepEqual(items.at(-1), {
      content: 'The stock price was $32.38.',
      finishReason: 'stop',
      usage: { promptTokens: 12, completionTokens: 7 },
    });
    assert.equal(server.requests[0]?.body?.stream, true);
    assert.deepEqual(server.requests[0]?.body?.stream_options, { include_usage: true });
    assert.deepEqual(client.totalUsage(), { promptTokens: 12, completionTokens: 7 });
  });

  test('a leading <think> block (reasoning models) is not streamed as answer text', async (t) => {
    const { server, client } = await setup(t);
    server.reply({
      sse: textStream(['<thi', 'nk>Check the', ' date.</th', 'ink>\n', '\nIt was', ' $32.38.']),
    });
    server.reply({ sse: textStream(['<', 'b>bold</b>']) });
    server.reply({ sse: textStream(['<think>never closed']) });
    const items = await collect(client.createStream([question()]));
    assert.deepEqual(items.slice(0, -1), ['It was', ' $32.38.']);
    assert.deepEqual(items.at(-1), {
      content: 'It was $32.38.',
      finishReason: 'stop',
      usage: { promptTokens: 0, completionTokens: 0 },
      thought: 'Check the date.',
    });
    const plain = await collect(client.createStream([question()]));
    assert.deepEqual(plain.slice(0, -1), ['<b>bold</b>']);
    const unclosed = await collect(client.createStream([question()]));
    assert.deepEqual(unclosed.slice(0, -1), ['<think>never closed']);
    assert.equal((unclosed.at(-1) as CreateResult).content, '<think>never closed');
  });

  test('reassembles tool-call deltas split across chunks, by index, with the text as thought', async (t) => {
    const { server, client } = await setup(t);
    server.reply({
      sse: [
        chunk({ role: 'assistant', content: '' }),
        chunk({ content: 'Let me check ' }),
        chunk({ content: 'both.' }),
        chunk({ toolCalls: [{ index: 0, id: 'call_a', name: 'get_stock_price', arguments: '' }] }),
        chunk({ toolCalls: [{ index: 0, arguments: '{"ticker":' }] }),
        chunk({ toolCalls: [{ index: 1, id: 'call_b', name: 'get_stock_price', arguments: '{"tick' }] }),
        chunk({ toolCalls: [{ index: 0, arguments: '"AAPL","date":"2021/01/01"}' }] }),
        chunk({ toolCalls: [{ index: 1, arguments: 'er":"MSFT",' }] }),
        chunk({ toolCalls: [{ index: 1, arguments: '"date":"2021/01/01"}' }] }),
        chunk({ finishReason: 'tool_calls' }),
        chunk({ usage: { prompt_tokens: 80, completion_tokens: 40 } }),
      ],
    });
    const items = await collect(client.createStream([question()], { tools: [stockPriceTool()] }));
    assert.deepEqual(items.slice(0, -1), ['Let me check ', 'both.']);
    assert.deepEqual(items.at(-1), {
      content: [
        { id: 'call_a', name: 'get_stock_price', arguments: '{"ticker":"AAPL","date":"2021/01/01"}' },
        { id: 'call_b', name: 'get_stock_price', arguments: '{"ticker":"MSFT","date":"2021/01/01"}' },
      ],
      finishReason: 'function_calls',
      usage: { promptTokens: 80, completionTokens: 40 },
      thought: 'Let me check both.',
    });
  });

  test('a failure before the first chunk is retried; an error event mid-stream is not', async (t) => {
    const { server, client, retries } = await setup(t);
    server.reply(
      { status: 502, json: errorBody('bad gateway', 'server_error') },
      { sse: textStream(['ok'], { prompt_tokens: 1, completion_tokens: 1 }) },
    );
    const items = await collect(client.createStream([question()]));
    assert.equal((items.at(-1) as CreateResult).content, 'ok');
    assert.equal(retries.length, 1);

    server.reply({
      sse: [chunk({ content: 'Hal' }), { error: { message: 'model crashed', type: 'server_error' } }],
    });
    await assert.rejects(
      collect(client.createStream([question()])),
      rejectsWith('model-error', /model crashed/),
    );
    assert.equal(server.requests.length, 3);
  });

  test('a JSON error body to a stream request is a model-error quoting the provider, not "stream ended"', async (t) => {
    const { server, client } = await setup(t);
    server.reply({ json: { error: { message: 'upstream model overloaded', code: 503 } } });
    await assert.rejects(
      collect(client.createStream([question()])),
      rejectsWith('model-error', /the provider said: upstream model overloaded/),
    );
    // The same body labelled as an event stream, and a proxy's page: quoted, not lost.
    server.reply({
      json: { error: { message: 'quota exhausted for this key' } },
      headers: { 'content-type': 'text/event-stream' },
    });
    await assert.rejects(
      collect(client.createStream([question()])),
      rejectsWith('model-error', /the provider said: quota exhausted for this key/),
    );
    server.reply({ json: 'Bad Gateway', headers: { 'content-type': 'text/html' } });
    await assert.rejects(
      collect(client.createStream([question()])),
      rejectsWith('model-error', /ended before the model finished .*not an event stream: "Bad Gateway"/),
    );
    // A server that ignores `stream: true` and sends the whole completion still gives the answer.
    server.reply({
      json: chatCompletion({ content: 'Hello!', usage: { prompt_tokens: 3, completion_tokens: 2 } }),
    });
    const items = await collect(client.createStream([question()]));
    assert.deepEqual(items, [
      'Hello!',
      { content: 'Hello!', finishReason: 'stop', usage: { promptTokens: 3, completionTokens: 2 } },
    ]);
  });

  test('a stream cut before the finish reason fails with model-error', async (t) => {
    const { server, client } = await setup(t);
    server.reply({ sse: [chunk({ content: 'Hal' })], done: false });
    await assert.rejects(
      collect(client.createStream([question()])),
      rejectsWith('model-error', /ended before/),
    );
  });

  test('cancellation in the middle of a stream rejects with cancelled and drops the connection', async (t) => {
    const { server, client } = await setup(t);
    server.reply({
      sse: [chunk({ role: 'assistant', content: '' }), chunk({ content: 'The ' })],
      hang: true,
    });
    const controller = new AbortController();
    const seen: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const item of client.createStream([question()], { signal: controller.signal })) {
          if (typeof item === 'string') seen.push(item);
          controller.abort();
        }
      })(),
      rejectsWith('cancelled', /model 'gpt-4o'/),
    );
    assert.deepEqual(seen, ['The ']);
    await server.requests[0]?.closed; // the server saw the client go away
    assert.equal(server.requests[0]?.finished, false);
    assert.equal(server.requests.length, 1);
  });

  test('leaving the loop early closes the HTTP request', async (t) => {
    const { server, client } = await setup(t);
    server.reply({ sse: [chunk({ content: 'a' }), chunk({ content: 'b' })], hang: true });
    for await (const item of client.createStream([question()])) {
      assert.equal(item, 'a');
      break;
    }
    await server.requests[0]?.closed;
    assert.equal(server.requests[0]?.finished, false);
  });
});

describe('OpenAIChatCompletionClient: errors, retries, cancellation', () => {
  test('401 is an authentication error, not retried', async (t) => {
    const { server, client } = await setup(t);
    server.reply({
      status: 401,
      json: errorBody('Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key'),
    });
    await assert.rejects(client.create([question()]), (e: unknown) => {
      assert.ok(e instanceof ModelError);
      assert.equal(e.code, 'authentication');
      assert.equal(e.status, 401);
      assert.match(e.message, /refused the credentials \(401\): Incorrect API key provided\./);
      assert.match(e.message, /OPENAI_API_KEY/);
      assert.doesNotMatch(e.message, /sk-test/);
      return true;
    });
    assert.equal(server.requests.length, 1);
  });

  test('429 with a long retry-after fails at once with rate-limited and retryAfterMs', async (t) => {
    const { server, client, retries } = await setup(t);
    server.reply({
      status: 429,
      headers: { 'retry-after': '120' },
      json: errorBody('Rate limit reached for requests', 'requests', 'rate_limit_exceeded'),
    });
    await assert.rejects(client.create([question()]), (e: unknown) => {
      assert.ok(e instanceof ModelError);
      assert.equal(e.code, 'rate-limited');
      assert.equal(e.retryAfterMs, 120_000);
      assert.match(e.message, /rate limited by the provider \(429\); retry after 120000 ms/);
      return true;
    });
    assert.equal(server.requests.length, 1);
    assert.equal(retries.length, 0);
  });

  test('429 with a short retry-after is waited for as asked, then retried', async (t) => {
    const { server, client, retries } = await setup(t);
    server.reply(
      { status: 429, headers: { 'retry-after-ms': '20' }, json: errorBody('slow down', 'requests') },
      { json: chatCompletion({ content: 'ok' }) },
    );
    assert.equal((await client.create([question()])).content, 'ok');
    assert.equal(server.requests.length, 2);
    assert.equal(retries.length, 1);
    assert.equal(retries[0]?.delayMs, 20);
    assert.equal(retries[0]?.error.code, 'rate-limited');
  });

  test('429 out of quota is not retried', async (t) => {
    const { server, client } = await setup(t);
    server.reply({
      status: 429,
      json: errorBody('You exceeded your current quota', 'insufficient_quota', 'insufficient_quota'),
    });
    await assert.rejects(client.create([question()]), rejectsWith('rate-limited', /quota/));
    assert.equal(server.requests.length, 1);
  });

  test('500 then success is retried with backoff', async (t) => {
    const { server, client, retries } = await setup(t);
    server.reply(
      { status: 500, json: errorBody('The server had an error', 'server_error') },
      { json: chatCompletion({ content: 'recovered' }) },
    );
    assert.equal((await client.create([question()])).content, 'recovered');
    assert.equal(server.requests.length, 2);
    assert.equal(retries[0]?.attempt, 1);
    assert.equal((retries[0]?.error as ModelError).status, 500);
  });

  test('an onRetry hook that throws does not stop the retry', async (t) => {
    const { server, client } = await setup(t, {
      onRetry: () => {
        throw new Error('metrics backend is down');
      },
    });
    server.reply(
      { status: 503, json: errorBody('overloaded', 'server_error') },
      { json: chatCompletion({ content: 'recovered' }) },
    );
    assert.equal((await client.create([question()])).content, 'recovered');
  });

  test('5xx retries are bounded by maxRetries', async (t) => {
    const { server, client } = await setup(t, { maxRetries: 2 });
    for (let i = 0; i < 3; i++) server.reply({ status: 503, json: errorBody('overloaded', 'server_error') });
    await assert.rejects(client.create([question()]), (e: unknown) => {
      assert.ok(e instanceof ModelError);
      assert.equal(e.code, 'model-error');
      assert.equal(e.status, 503);
      assert.match(e.message, /the provider failed \(503\): overloaded/);
      return true;
    });
    assert.equal(server.requests.length, 3);
  });

  test('a network error is retried, and reported as unavailable when retries run out', async (t) => {
    const { server, client } = await setup(t, { maxRetries: 1 });
    server.reply({ drop: true }, { json: chatCompletion({ content: 'back' }) });
    assert.equal((await client.create([question()])).content, 'back');
    server.reply({ drop: true }, { drop: true });
    await assert.rejects(
      client.create([question()]),
      rejectsWith('unavailable', /cannot reach http:\/\/127\.0\.0\.1/),
    );
    assert.equal(server.requests.length, 4);
  });

  test('a 400 schema error names the tool whose schema the provider rejected', async (t) => {
    const { server, client } = await setup(t);
    const other: ToolSchema = {
      name: 'get_weather',
      description: 'Weather.',
      parameters: { type: 'object', properties: {}, required: [], additionalProperties: false },
      strict: false,
    };
    const message =
      "Invalid schema for function 'get_stock_price': In context=(), 'required' is required to be supplied and to be an array including every key in properties. Missing 'date'.";
    server.reply(
      {
        status: 400,
        json: errorBody(
          message,
          'invalid_request_error',
          'invalid_function_parameters',
          'tools[1].function.parameters',
        ),
      },
      { status: 400, json: errorBody(message, 'invalid_request_error') },
    );
    for (let i = 0; i < 2; i++) {
      await assert.rejects(
        client.create([question()], { tools: [other, stockPriceTool()] }),
        (e: unknown) => {
          assert.ok(e instanceof ModelError);
          assert.equal(e.code, 'bad-request');
          assert.equal(e.toolName, 'get_stock_price');
          assert.match(e.message, /rejected the schema of tool 'get_stock_price' \(400/);
          assert.match(e.message, /Missing 'date'/);
          return true;
        },
      );
    }
    assert.equal(server.requests.length, 2);
  });

  test('a context-length 400 is context-length', async (t) => {
    const { server, client } = await setup(t);
    server.reply({
      status: 400,
      json: errorBody(
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
        'invalid_request_error',
        'context_length_exceeded',
        'messages',
      ),
    });
    await assert.rejects(
      client.create([question()]),
      rejectsWith('context-length', /maximum context length/),
    );
  });

  test('cancelling a pending request rejects with cancelled; the deadline with timeout', async (t) => {
    const { server, client } = await setup(t);
    server.reply({ hang: true });
    const controller = new AbortController();
    const pending = client.create([question()], { signal: controller.signal });
    while (server.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
    controller.abort();
    await assert.rejects(pending, rejectsWith('cancelled', /model 'gpt-4o'/));
    await server.requests[0]?.closed;

    const reason = new ToolbusError('cancelled', 'the user left');
    await assert.rejects(
      client.create([question()], { signal: AbortSignal.abort(reason) }),
      (e) => e === reason,
    );

    const quick = new OpenAIChatCompletionClient({
      model: 'gpt-4o',
      baseURL: server.baseURL,
      apiKey: 'k',
      timeoutMs: 50,
    });
    server.reply({ hang: true });
    await assert.rejects(quick.create([question()]), rejectsWith('timeout', /within 50 ms \(timeoutMs\)/));
    await server.requests[1]?.closed;
  });

  test('a timeoutMs beyond what setTimeout allows does not time out at once', async (t) => {
    const { server, client } = await setup(t, { timeoutMs: 30 * 24 * 3600 * 1000 }); // 30 days
    server.reply({ json: chatCompletion({ content: 'Hello!' }) }, { sse: textStream(['Hel', 'lo!']) });
    assert.equal((await client.create([question()])).content, 'Hello!');
    const streamed = await collect(client.createStream([question()]));
    assert.equal((streamed.at(-1) as CreateResult).content, 'Hello!');
  });

  test('cancelling during a retry wait ends the wait', async (t) => {
    const { server, client } = await setup(t, { retryBaseDelayMs: 60_000, maxRetryDelayMs: 120_000 });
    server.reply({ status: 500, json: errorBody('boom', 'server_error') });
    const controller = new AbortController();
    const pending = client.create([question()], { signal: controller.signal });
    while (server.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
    setTimeout(() => controller.abort(), 20);
    await assert.rejects(pending, rejectsWith('cancelled', /gpt-4o/));
    assert.equal(server.requests.length, 1);
  });

  test('refuses tools for a model that cannot call functions, before any request', async (t) => {
    const { server, client } = await setup(t, { model: 'llama-2', modelInfo: { functionCalling: false } });
    await assert.rejects(
      client.create([question()], { tools: [stockPriceTool()] }),
      rejectsWith('unsupported', /model 'llama-2' cannot call functions.*'get_stock_price'/),
    );
    await assert.rejects(
      collect(client.createStream([question()], { tools: [stockPriceTool()] })),
      rejectsWith('unsupported', /cannot call functions/),
    );
    assert.equal(server.requests.length, 0);
  });

  test('close() ends calls in flight and refuses new ones', async (t) => {
    const { server, client } = await setup(t);
    server.reply({ hang: true });
    const pending = client.create([question()]);
    while (server.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
    await client.close();
    await assert.rejects(pending, rejectsWith('closed', /closed during the call/));
    await server.requests[0]?.closed;
    await client.close();
    await client.close();
    await assert.rejects(client.create([question()]), rejectsWith('closed', /the client is closed/));
    assert.equal(server.requests.length, 1);
  });
});

describe('OpenAIChatCompletionClient: construction', () => {
  test('needs a key for OpenAI itself, names the variable; rejects bad options', (t) => {
    const saved = { key: process.env.OPENAI_API_KEY, url: process.env.OPENAI_BASE_URL };
    delete process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_BASE_URL;
    t.after(() => {
      if (saved.key !== undefined) process.env.OPENAI_API_KEY = saved.key;
      if (saved.url !== undefined) process.env.OPENAI_BASE_URL = saved.url;
    });
    assert.throws(
      () => new OpenAIChatCompletionClient({ model: 'gpt-4o' }),
      (e: unknown) =>
        e instanceof ToolbusError && e.code === 'authentication' && /set OPENAI_API_KEY/.test(e.message),
    );
    // A local server (Ollama, vLLM, llama.cpp) needs no key.
    assert.equal(
      new OpenAIChatCompletionClient({ model: 'llama3.1', baseURL: 'http://127.0.0.1:1/v1/' }).baseURL,
      'http://127.0.0.1:1/v1',
    );
    assert.throws(
      () => new OpenAIChatCompletionClient({ model: '' }),
      /option 'model' must be a non-empty string/,
    );
    assert.throws(
      () => new OpenAIChatCompletionClient({ model: 'm', apiKey: 'k', timeoutMs: 0 }),
      /option 'timeoutMs' must be a positive number, got 0/,
    );
  });
});
