import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UserMessage } from '../index.js';
import type { CreateResult } from '../index.js';
import { OpenAIChatCompletionClient } from './openai-chat-completion-client.js';

const question = [new UserMessage({ content: 'Hi' })];

function event(delta: Record<string, unknown>, finish: string | null = null): string {
  const body = {
    id: 'c',
    object: 'chat.completion.chunk',
    created: 0,
    model: 'm',
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(body)}\r\n\r\n`;
}

/** A client whose `fetch` answers with `bytes`, cut into pieces of `size`, and records each request's signal. */
function clientAnswering(
  bytes: Uint8Array,
  contentType: string,
  size: number,
): { client: OpenAIChatCompletionClient; signals: AbortSignal[] } {
  const signals: AbortSignal[] = [];
  const fetch = async (_url: unknown, init?: RequestInit): Promise<Response> => {
    signals.push(init!.signal!);
    let at = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (at >= bytes.length) controller.close();
        else controller.enqueue(bytes.slice(at, (at += size)));
      },
    });
    return new Response(body, { status: 200, headers: { 'content-type': contentType } });
  };
  const client = new OpenAIChatCompletionClient({
    model: 'm',
    apiKey: 'k',
    baseURL: 'http://127.0.0.1:9/v1',
    fetch: fetch as typeof globalThis.fetch,
  });
  return { client, signals };
}

async function collect(stream: AsyncIterable<string | CreateResult>): Promise<(string | CreateResult)[]> {
  const out: (string | CreateResult)[] = [];
  for await (const item of stream) out.push(item);
  return out;
}

test('an event stream cut anywhere, inside characters and line ends included, reads the same', async () => {
  const text =
    ': comment\r\n\r\n' +
    event({ role: 'assistant', content: '' }) +
    event({ content: 'Prix: 32,38 € ' }) +
    event({ content: '🙂' }) +
    event({}, 'stop') +
    'data: [DONE]\r\n\r\n';
  const bytes = new TextEncoder().encode(text);
  for (const size of [1, 2, 3, 5, 64, bytes.length]) {
    const { client } = clientAnswering(bytes, 'text/event-stream; charset=utf-8', size);
    assert.deepEqual(
      await collect(client.createStream(question)),
      [
        'Prix: 32,38 € ',
        '🙂',
        {
          content: 'Prix: 32,38 € 🙂',
          finishReason: 'stop',
          usage: { promptTokens: 0, completionTokens: 0 },
        },
      ],
      `pieces of ${size} bytes`,
    );
  }
});

test('a request read to its end is not aborted afterwards; a stream left early is', async () => {
  const completion = {
    id: 'c',
    object: 'chat.completion',
    created: 0,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }],
  };
  const json = clientAnswering(new TextEncoder().encode(JSON.stringify(completion)), 'application/json', 7);
  assert.equal((await json.client.create(question)).content, 'Hello');
  assert.equal(json.signals[0]?.aborted, false);

  const stream = new TextEncoder().encode(event({ content: 'a' }) + event({ content: 'b' }, 'stop'));
  const whole = clientAnswering(stream, 'text/event-stream', 16);
  assert.equal((await collect(whole.client.createStream(question))).length, 3);
  assert.equal(whole.signals[0]?.aborted, false);

  const early = clientAnswering(stream, 'text/event-stream', 16);
  for await (const item of early.client.createStream(question)) {
    assert.equal(item, 'a');
    break;
  }
  assert.equal(early.signals[0]?.aborted, true);
});
