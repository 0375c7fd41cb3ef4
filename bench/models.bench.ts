/**
 * @module Model client overhead: OpenAIChatCompletionClient against the raw `openai` SDK it is built on,
 * both talking to the same local OpenAI-compatible server (test/fixtures/fake-openai-server.ts), so the
 * difference is toolbus's work: message conversion, schema profiles, name mapping, parsing, retries.
 * Target: the client's p50 at most 1.3× the raw SDK's, JSON and SSE alike.
 */
import OpenAI from 'openai';
import { z } from 'zod';
import { FunctionTool } from '../src/tools/index.js';
import { UserMessage } from '../src/models/index.js';
import { OpenAIChatCompletionClient } from '../src/models/openai/index.js';
import { chatCompletion, chunk, startFakeOpenAIServer } from '../test/fixtures/fake-openai-server.js';
import { measure, type BenchTable } from './harness.js';

export default async function (): Promise<BenchTable[]> {
  const server = await startFakeOpenAIServer();
  try {
    const tool = new FunctionTool(async () => 1, {
      name: 'get_stock_price',
      description: 'Get the stock price.',
      parameters: z.object({
        ticker: z.string().describe('ticker'),
        date: z.string().describe('Date in YYYY/MM/DD'),
      }),
    });
    const sdk = new OpenAI({ apiKey: 'k', baseURL: server.baseURL, maxRetries: 0 });
    const client = new OpenAIChatCompletionClient({ model: 'm', apiKey: 'k', baseURL: server.baseURL });
    const question = 'What is the stock price of AAPL on 2021/01/01?';
    const rawBody = {
      model: 'm',
      messages: [{ role: 'user' as const, content: question }],
      tools: [
        {
          type: 'function' as const,
          function: { name: tool.name, description: tool.description, parameters: tool.schema.parameters },
        },
      ],
    };
    const messages = [new UserMessage({ content: question })];
    const opts = { iterations: 3_000, maxMs: 4_000, warmup: 200 };

    server.replyAlways({
      json: chatCompletion({
        toolCalls: [
          { id: 'call_1', name: 'get_stock_price', arguments: '{"ticker":"AAPL","date":"2021/01/01"}' },
        ],
        usage: { prompt_tokens: 60, completion_tokens: 20 },
      }),
    });
    const json: BenchTable = {
      title: 'Model client, one tool call as JSON (local server)',
      baseline: 'raw openai SDK chat.completions.create',
      rows: [],
      notes: ['Target: OpenAIChatCompletionClient.create p50 ≤ 1.3× the raw SDK.'],
    };
    for (const concurrency of [1, 8]) {
      json.rows.push(
        await measure('raw openai SDK chat.completions.create', () => sdk.chat.completions.create(rawBody), {
          ...opts,
          concurrency,
        }),
      );
      json.rows.push(
        await measure('OpenAIChatCompletionClient.create', () => client.create(messages, { tools: [tool] }), {
          ...opts,
          concurrency,
        }),
      );
    }

    // 100 text chunks, then two tool calls whose arguments arrive in 20 pieces each, then usage.
    const sse: unknown[] = [chunk({ role: 'assistant', content: '' })];
    for (let i = 0; i < 100; i++) sse.push(chunk({ content: `word${i} ` }));
    for (const index of [0, 1]) {
      sse.push(
        chunk({ toolCalls: [{ index, id: `call_${index}`, name: 'get_stock_price', arguments: '' }] }),
      );
      for (let i = 0; i < 20; i++)
        sse.push(chunk({ toolCalls: [{ index, arguments: i === 0 ? '{"ticker":"' : 'A' }] }));
      sse.push(chunk({ toolCalls: [{ index, arguments: '","date":"2021/01/01"}' }] }));
    }
    sse.push(
      chunk({ finishReason: 'tool_calls' }),
      chunk({ usage: { prompt_tokens: 60, completion_tokens: 160 } }),
    );
    server.replyAlways({ sse });
    const stream: BenchTable = {
      title: `Model client, streamed (${sse.length} SSE chunks with split tool-call deltas)`,
      baseline: 'raw openai SDK stream, iterate chunks',
      rows: [],
      notes: ['Target: createStream p50 ≤ 1.3× iterating the raw SDK stream.'],
    };
    const sopts = { iterations: 1_000, maxMs: 4_000, warmup: 100 };
    stream.rows.push(
      await measure(
        'raw openai SDK stream, iterate chunks',
        async () => {
          const s = await sdk.chat.completions.create({
            ...rawBody,
            stream: true,
            stream_options: { include_usage: true },
          });
          for await (const c of s) void c;
        },
        sopts,
      ),
    );
    stream.rows.push(
      await measure(
        'OpenAIChatCompletionClient.createStream',
        async () => {
          for await (const item of client.createStream(messages, { tools: [tool] })) void item;
        },
        sopts,
      ),
    );
    return [json, stream];
  } finally {
    await server.close();
  }
}
