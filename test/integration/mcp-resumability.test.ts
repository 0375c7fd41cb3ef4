/**
 * Resumable streams (SEP-1699) of `createMcpHttpHandler({ resumability })`: a POST stream opens with a
 * priming event (an id, empty data, `retry`), even when a 2025-11-25 session's request says an older
 * `MCP-Protocol-Version`; a call that outlives `closeStreamsAfterMs` has its stream closed, and a `GET`
 * with `Last-Event-ID` gets its result; the official client does that by itself. Without the option
 * nothing of this happens. Plus the bounds of the in-memory event store.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { z } from 'zod';
import {
  MemoryEventStore,
  createMcpHttpHandler,
  type McpHttpHandlerOptions,
} from '../../src/adapters/mcp/index.js';
import { FunctionTool, LiveToolSet } from '../../src/tools/index.js';
import { listenMcp } from '../support/mcp-http.js';

const slow = new FunctionTool(
  async ({ ms }: { ms: number }, ctx) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    ctx.log('info', 'still here');
    return `slept ${ms} ms`;
  },
  { name: 'slow', description: 'Sleeps', parameters: z.object({ ms: z.number() }) },
);

async function serve(
  t: { after: (fn: () => Promise<void>) => void },
  options: McpHttpHandlerOptions,
): Promise<string> {
  return listenMcp(t, createMcpHttpHandler(new LiveToolSet([slow]), options));
}

const BASE = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

async function session(url: string): Promise<string> {
  const init = await fetch(url, {
    method: 'POST',
    headers: { ...BASE, 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  await init.text();
  return init.headers.get('mcp-session-id')!;
}

interface SseEvent {
  id?: string;
  retry?: number;
  data: string;
}

/** The SSE events of a whole response (read to its end). */
async function eventsOf(response: Response): Promise<SseEvent[]> {
  const text = await response.text();
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const event: SseEvent = { data: '' };
      for (const line of block.split('\n')) {
        const [field, ...rest] = line.split(':');
        const value = rest.join(':').replace(/^ /, '');
        if (field === 'id') event.id = value;
        else if (field === 'retry') event.retry = Number(value);
        else if (field === 'data') event.data += value;
      }
      return event;
    });
}

describe('resumable streams', { timeout: 30_000 }, () => {
  test('priming with retry, a long call’s stream closed, its result after GET with Last-Event-ID', async (t) => {
    const url = await serve(t, { resumability: { retryMs: 50, closeStreamsAfterMs: 100 } });
    const id = await session(url);
    // An older header than the session negotiated: the session's revision decides.
    const headers = { ...BASE, 'mcp-session-id': id, 'mcp-protocol-version': '2025-03-26' };
    const call = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'slow', arguments: { ms: 400 } },
      }),
    });
    const events = await eventsOf(call); // ends when the server closes the stream at 100 ms
    assert.equal(events.length, 1, JSON.stringify(events));
    assert.equal(events[0]?.data, '');
    assert.equal(events[0]?.retry, 50);
    assert.ok(events[0]?.id);
    const resumed = await fetch(url, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': id, 'last-event-id': events[0].id },
    });
    assert.equal(resumed.status, 200);
    const later = await eventsOf(resumed);
    const messages = later.map(
      (e) => JSON.parse(e.data) as { id?: number; method?: string; result?: unknown },
    );
    assert.equal(messages.at(-1)?.id, 7);
    assert.deepEqual(messages.at(-1)?.result, { content: [{ type: 'text', text: 'slept 400 ms' }] });
    assert.ok(later.every((e) => e.id !== undefined));
  });

  test('the official client resumes a closed stream by itself', async (t) => {
    const url = await serve(t, { resumability: { retryMs: 20, closeStreamsAfterMs: 50 } });
    const client = new Client({ name: 'resumer', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    t.after(() => client.close());
    const result = await client.callTool({ name: 'slow', arguments: { ms: 300 } });
    assert.deepEqual(result.content, [{ type: 'text', text: 'slept 300 ms' }]);
  });

  test('without the option: no ids, no priming, the stream stays open until the result', async (t) => {
    const url = await serve(t, {});
    const id = await session(url);
    const call = await fetch(url, {
      method: 'POST',
      headers: { ...BASE, 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'slow', arguments: { ms: 50 } },
      }),
    });
    const events = await eventsOf(call); // the tool's log message, then its result
    assert.equal(events.length, 2);
    assert.ok(events.every((e) => e.id === undefined && e.retry === undefined && e.data !== ''));
    assert.equal((JSON.parse(events[1]!.data) as { id: number }).id, 2);
  });

  test('bad options are refused naming them', () => {
    assert.throws(
      () => createMcpHttpHandler(new LiveToolSet([]), { resumability: { closeStreamsAfterMs: -1 } }),
      /closeStreamsAfterMs/,
    );
    assert.throws(
      () => createMcpHttpHandler(new LiveToolSet([]), { resumability: { maxEventsPerSession: 0 } }),
      /maxEventsPerSession/,
    );
  });
});

describe('MemoryEventStore', () => {
  test('replays a stream’s later events, skips priming ones, keeps at most its bound', async () => {
    const store = new MemoryEventStore(3);
    const ping = (id: number) => ({ jsonrpc: '2.0' as const, id, result: {} });
    const first = await store.storeEvent('s1', {} as never);
    await store.storeEvent('s1', ping(1));
    await store.storeEvent('s2', ping(2));
    await store.storeEvent('s1', ping(3));
    const sent: unknown[] = [];
    assert.equal(await store.replayEventsAfter(first, { send: async (_id, m) => void sent.push(m) }), 's1');
    assert.deepEqual(sent.slice(), [ping(1), ping(3)]);
    await store.storeEvent('s1', ping(4)); // the bound drops the oldest (ping 1)
    sent.length = 0;
    await store.replayEventsAfter(first, { send: async (_id, m) => void sent.push(m) });
    assert.deepEqual(sent.slice(), [ping(3), ping(4)]);
    assert.equal(await store.getStreamIdForEventId(first), 's1');
    assert.equal(await store.getStreamIdForEventId('s1.999'), undefined);
    assert.equal(await store.getStreamIdForEventId('nonsense'), undefined);
    await assert.rejects(
      store.replayEventsAfter('nonsense', { send: async () => undefined }),
      /unknown event id/,
    );
  });

  test('keeps at most its bytes, dropping the oldest; the newest stays even alone over them', async () => {
    const store = new MemoryEventStore(1000, 250);
    // Each is 100 bytes of JSON.
    const event = (id: number, size = 100) => {
      const base = { jsonrpc: '2.0' as const, id, result: { text: '' } };
      base.result.text = 'x'.repeat(size - JSON.stringify(base).length);
      assert.equal(JSON.stringify(base).length, size);
      return base;
    };
    const first = await store.storeEvent('s', {} as never); // a priming event: 2 bytes
    for (let id = 1; id <= 3; id++) await store.storeEvent('s', event(id));
    const replay = async (): Promise<unknown[]> => {
      const sent: unknown[] = [];
      await store.replayEventsAfter(first, { send: async (_id, m) => void sent.push(m) });
      return sent;
    };
    assert.deepEqual(await replay(), [event(2), event(3)]);
    await store.storeEvent('s', event(4, 1000));
    assert.deepEqual(await replay(), [event(4, 1000)]);
    assert.throws(
      () => createMcpHttpHandler(new LiveToolSet([]), { resumability: { maxBytesPerSession: 0 } }),
      /maxBytesPerSession/,
    );
  });
});
