/**
 * What an MCP client does for the tools it calls through toolbus's bridge, checked with the official
 * client: log messages (`ctx.log` → `notifications/message`, filtered per session by
 * `logging/setLevel`), elicitation and sampling round trips (`ctx.elicit`, `ctx.sample`), their
 * cancellation with the call, a client that declared neither (`unsupported`), and the same tool called
 * through `ToolSet.call` and the REST gateway, where nobody can answer.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { createMcpHttpHandler, createMcpServer } from '../../src/adapters/mcp/index.js';
import { createGateway } from '../../src/gateway/index.js';
import { FunctionTool, LiveToolSet, ToolSet, type ToolLogLevel } from '../../src/tools/index.js';
import { waitFor } from '../fixtures/mcp-spawn.js';
import { listenMcp } from '../support/mcp-http.js';

const LEVELS: ToolLogLevel[] = ['debug', 'info', 'warning', 'error'];

function makeTools(probe: { elicitAborted?: boolean } = {}): LiveToolSet {
  return new LiveToolSet([
    new FunctionTool(
      async (_args: Record<string, never>, ctx) => {
        for (const level of LEVELS) ctx.log(level, { said: level }, 'talker');
        return 'talked';
      },
      { name: 'talk', description: 'Logs at four levels', parameters: z.object({}) },
    ),
    new FunctionTool(
      async ({ question }: { question: string }, ctx) => {
        try {
          const answer = await ctx.elicit({
            message: question,
            requestedSchema: {
              type: 'object',
              properties: { name: { type: 'string', description: 'Your name' } },
              required: ['name'],
            },
          });
          return `action=${answer.action} content=${JSON.stringify(answer.content ?? {})}`;
        } catch (error) {
          probe.elicitAborted = ctx.signal.aborted;
          throw error;
        }
      },
      { name: 'ask', description: 'Asks the user', parameters: z.object({ question: z.string() }) },
    ),
    new FunctionTool(
      async ({ prompt }: { prompt: string }, ctx) => {
        const answer = await ctx.sample({
          messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
          maxTokens: 50,
          systemPrompt: 'Be brief',
          temperature: 0.2,
        });
        const part = Array.isArray(answer.content) ? answer.content[0] : answer.content;
        return `model=${answer.model} stop=${answer.stopReason ?? '-'} text=${part?.type === 'text' ? part.text : '?'}`;
      },
      {
        name: 'think',
        description: 'Samples the client model',
        parameters: z.object({ prompt: z.string() }),
      },
    ),
  ]);
}

function textOf(result: unknown): string {
  return (result as { content: { text?: string }[] }).content.map((c) => c.text ?? '').join('');
}

async function connectInMemory(
  t: { after: (fn: () => Promise<void>) => void },
  tools: LiveToolSet,
  capabilities: Record<string, unknown> = {},
): Promise<Client> {
  const server = createMcpServer(tools);
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'features-test', version: '1' }, { capabilities });
  await client.connect(clientSide);
  t.after(async () => {
    await client.close();
    await server.close();
  });
  return client;
}

async function serveHttp(
  t: { after: (fn: () => Promise<void>) => void },
  tools: LiveToolSet,
): Promise<string> {
  return listenMcp(t, createMcpHttpHandler(tools));
}

describe('ctx.log over MCP', { timeout: 30_000 }, () => {
  test('the logging capability is declared, setLevel answers {} and filters what follows', async (t) => {
    const client = await connectInMemory(t, makeTools());
    assert.deepEqual(client.getServerCapabilities()?.logging, {});
    const seen: { level: string; data: unknown; logger?: string }[] = [];
    client.setNotificationHandler('notifications/message', (n) => void seen.push(n.params));
    await client.callTool({ name: 'talk', arguments: {} });
    // Before any setLevel every message is sent, before the result.
    assert.deepEqual(
      seen.map((m) => m.level),
      LEVELS,
    );
    assert.deepEqual(seen[0], { level: 'debug', data: { said: 'debug' }, logger: 'talker' });
    assert.deepEqual(await client.setLoggingLevel('warning'), {});
    seen.length = 0;
    await client.callTool({ name: 'talk', arguments: {} });
    assert.deepEqual(
      seen.map((m) => m.level),
      ['warning', 'error'],
    );
  });

  test('each HTTP session keeps its own level', async (t) => {
    const url = await serveHttp(t, makeTools());
    const clients: Client[] = [];
    const seen: string[][] = [[], []];
    for (let i = 0; i < 2; i++) {
      const client = new Client({ name: `c${i}`, version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      t.after(() => client.close());
      client.setNotificationHandler('notifications/message', (n) => void seen[i]!.push(n.params.level));
      clients.push(client);
    }
    await clients[0]!.setLoggingLevel('error');
    await clients[1]!.setLoggingLevel('info');
    await clients[0]!.callTool({ name: 'talk', arguments: {} });
    await clients[1]!.callTool({ name: 'talk', arguments: {} });
    assert.deepEqual(seen[0], ['error']);
    assert.deepEqual(seen[1], ['info', 'warning', 'error']);
  });
});

describe('ctx.elicit and ctx.sample over MCP', { timeout: 30_000 }, () => {
  test('an elicitation round trip', async (t) => {
    const client = await connectInMemory(t, makeTools(), { elicitation: {} });
    const asked: unknown[] = [];
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push(request.params);
      return { action: 'accept', content: { name: 'Ada' } };
    });
    const result = await client.callTool({ name: 'ask', arguments: { question: 'Who are you?' } });
    assert.equal(result.isError, undefined, textOf(result));
    assert.equal(textOf(result), 'action=accept content={"name":"Ada"}');
    assert.equal((asked[0] as { message: string }).message, 'Who are you?');
  });

  test('a sampling round trip, parts both ways', async (t) => {
    const client = await connectInMemory(t, makeTools(), { sampling: {} });
    const asked: { systemPrompt?: string; temperature?: number; maxTokens: number; messages: unknown[] }[] =
      [];
    client.setRequestHandler('sampling/createMessage', async (request) => {
      asked.push(request.params);
      return {
        role: 'assistant',
        content: { type: 'text', text: 'forty-two' },
        model: 'test-model',
        stopReason: 'endTurn',
      };
    });
    const result = await client.callTool({ name: 'think', arguments: { prompt: 'meaning of life?' } });
    assert.equal(textOf(result), 'model=test-model stop=endTurn text=forty-two');
    assert.equal(asked[0]?.maxTokens, 50);
    assert.equal(asked[0]?.systemPrompt, 'Be brief');
    assert.equal(asked[0]?.temperature, 0.2);
    assert.deepEqual(asked[0]?.messages, [
      { role: 'user', content: { type: 'text', text: 'meaning of life?' } },
    ]);
  });

  test('cancelling the call cancels the question the client is answering', async (t) => {
    const probe: { elicitAborted?: boolean } = {};
    const client = await connectInMemory(t, makeTools(probe), { elicitation: {} });
    let questionSignal: AbortSignal | undefined;
    client.setRequestHandler(
      'elicitation/create',
      (_request, ctx) =>
        new Promise((resolve) => {
          questionSignal = ctx.mcpReq.signal;
          ctx.mcpReq.signal.addEventListener('abort', () => resolve({ action: 'cancel' }), { once: true });
        }),
    );
    const controller = new AbortController();
    const call = client.callTool(
      { name: 'ask', arguments: { question: 'Still there?' } },
      { signal: controller.signal },
    );
    assert.ok(await waitFor(() => questionSignal !== undefined, 5000, 10), 'the question never came');
    controller.abort();
    await assert.rejects(call);
    assert.ok(
      await waitFor(() => questionSignal?.aborted === true, 5000, 10),
      'the question was not cancelled',
    );
    assert.ok(await waitFor(() => probe.elicitAborted === true, 5000, 10), 'the tool was not cancelled');
  });

  test('a client that declared neither capability: the tool gets unsupported, as an isError result', async (t) => {
    const client = await connectInMemory(t, makeTools());
    const asked = await client.callTool({ name: 'ask', arguments: { question: 'Hello?' } });
    assert.equal(asked.isError, true);
    assert.match(textOf(asked), /the caller 'mcp' cannot answer an elicitation/);
    assert.match(textOf(asked), /declared the elicitation capability/);
    const sampled = await client.callTool({ name: 'think', arguments: { prompt: 'x' } });
    assert.equal(sampled.isError, true);
    assert.match(textOf(sampled), /cannot sample its model/);
  });

  test('over Streamable HTTP the elicitation travels on the call’s own stream', async (t) => {
    const url = await serveHttp(t, makeTools());
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
    };
    const init = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: { elicitation: {} },
          clientInfo: { name: 'raw', version: '1' },
        },
      }),
    });
    const session = init.headers.get('mcp-session-id');
    assert.ok(session);
    await init.text();
    const withSession = { ...headers, 'mcp-session-id': session };
    await (
      await fetch(url, {
        method: 'POST',
        headers: withSession,
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      })
    ).text();
    // No GET stream is opened: a request sent anywhere but the call's stream would never arrive.
    const call = await fetch(url, {
      method: 'POST',
      headers: withSession,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'ask', arguments: { question: 'Name?' } },
      }),
    });
    assert.equal(call.headers.get('content-type'), 'text/event-stream');
    const reader = call.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    const nextMessage = async (): Promise<Record<string, unknown>> => {
      for (let i = 0; i < 100; i++) {
        const match = /(?:^|\n)data: (.+)\n/.exec(buffer);
        if (match) {
          buffer = buffer.slice(match.index + match[0].length);
          return JSON.parse(match[1]!) as Record<string, unknown>;
        }
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended; left: ${buffer}`);
        buffer += value;
      }
      throw new Error('no message');
    };
    const question = await nextMessage();
    assert.equal(question.method, 'elicitation/create');
    const answer = await fetch(url, {
      method: 'POST',
      headers: withSession,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: question.id,
        result: { action: 'accept', content: { name: 'Grace' } },
      }),
    });
    assert.equal(answer.status, 202);
    const result = (await nextMessage()) as { id: number; result: { content: { text: string }[] } };
    assert.equal(result.id, 7);
    assert.equal(result.result.content[0]?.text, 'action=accept content={"name":"Grace"}');
    await reader.cancel();
  });
});

describe('ctx.elicit where nobody can answer', { timeout: 30_000 }, () => {
  test('ToolSet.call: an unsupported error result naming the caller', async () => {
    const result = await new ToolSet(makeTools().list()).call(
      'ask',
      { question: 'Anyone?' },
      { caller: 'agent' },
    );
    assert.equal(result.error?.code, 'unsupported');
    assert.match(result.content, /tool 'ask': the caller 'agent' cannot answer an elicitation/);
  });

  test('the REST gateway: the same, for the HTTP caller', async (t) => {
    const gateway = createGateway({ tools: makeTools(), noAuth: true });
    const url = await gateway.listen({ port: 0 });
    t.after(() => gateway.close());
    const res = await fetch(`${url}/api/v1/tools/ask/invoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ question: 'Anyone?' }),
    });
    const body = (await res.json()) as { isError: boolean; content: string; error?: { code: string } };
    assert.equal(body.isError, true, JSON.stringify(body));
    assert.match(body.content, /the caller 'http:[^']+' cannot answer an elicitation/);
  });
});
