/**
 * What a remote MCP server asks while its tool runs (an elicitation, a sampling request, log messages)
 * reaches the toolbus call's caller: an MCP client of toolbus's own bridge (toolbus as a proxy), or a
 * program's `clientFeatures`. Real parts: the SDK fixture server over Streamable HTTP and stdio, the
 * bridge on 127.0.0.1, and official MCP clients upstream.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createMcpHttpHandler, mcpServerTools } from '../../src/adapters/mcp/index.js';
import type { ElicitationRequest, ToolClientFeatures, ToolLogLevel } from '../../src/tools/index.js';
import { startHttpFixture, stdioFixtureParams } from '../fixtures/mcp-spawn.js';
import { listenMcp } from '../support/mcp-http.js';

/** An official MCP client that can answer elicitations and sampling requests, as `name`. */
async function upstreamClient(
  url: string,
  name: string,
  onElicit: (message: string, schema: unknown) => Promise<Record<string, string>>,
): Promise<{ client: Client; logs: { level: string; data: unknown; logger?: string }[] }> {
  const client = new Client(
    { name, version: '1.0.0' },
    { capabilities: { elicitation: { form: {} }, sampling: {} } },
  );
  const logs: { level: string; data: unknown; logger?: string }[] = [];
  client.setRequestHandler('elicitation/create', async (request) => {
    const params = request.params as { message: string; requestedSchema: unknown };
    return { action: 'accept', content: await onElicit(params.message, params.requestedSchema) };
  });
  client.setRequestHandler('sampling/createMessage', async (request) => {
    const first = request.params.messages[0]?.content as { text?: string };
    return {
      role: 'assistant',
      content: { type: 'text', text: `${name} read '${first.text}' (${request.params.systemPrompt})` },
      model: `${name}-model`,
      stopReason: 'endTurn',
    };
  });
  client.setNotificationHandler('notifications/message', (n) => {
    logs.push({
      level: n.params.level,
      data: n.params.data,
      ...(n.params.logger ? { logger: n.params.logger } : {}),
    });
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return { client, logs };
}

function textOf(result: unknown): string {
  const content = (result as { content: { type: string; text?: string }[] }).content;
  return content.map((c) => c.text ?? '').join('');
}

describe('a remote MCP server asks the caller of a toolbus call', { timeout: 60_000 }, () => {
  test('through the bridge, each question reaches the MCP client whose call it belongs to', async (t) => {
    const fixture = await startHttpFixture('sessions');
    t.after(() => fixture.stop());
    const remote = await mcpServerTools({ url: fixture.url, protocol: 'legacy', id: 'remote' });
    t.after(() => remote.close());
    const bridge = { url: await listenMcp(t, createMcpHttpHandler(remote.tools)) };

    // Both questions must be open at once, so only the stream they came on can tell them apart.
    let arrived = 0;
    let bothArrived!: () => void;
    const barrier = new Promise<void>((resolve) => (bothArrived = resolve));
    const questions: { who: string; message: string; schema: unknown }[] = [];
    const answerAs = (who: string) => async (message: string, schema: unknown) => {
      questions.push({ who, message, schema });
      if (++arrived >= 2) bothArrived();
      await barrier;
      return { name: who };
    };
    const alice = await upstreamClient(bridge.url, 'alice', answerAs('alice'));
    t.after(() => alice.client.close());
    const bob = await upstreamClient(bridge.url, 'bob', answerAs('bob'));
    t.after(() => bob.client.close());

    const [forAlice, forBob] = await Promise.all([
      alice.client.callTool({ name: 'ask', arguments: { question: 'Who are you, alice?' } }),
      bob.client.callTool({ name: 'ask', arguments: { question: 'Who are you, bob?' } }),
    ]);
    assert.deepEqual(questions.map((q) => [q.who, q.message]).sort(), [
      ['alice', 'Who are you, alice?'],
      ['bob', 'Who are you, bob?'],
    ]);
    // The form arrives as the server sent it, and toolbus's client filled in the default left out.
    assert.deepEqual((questions[0]!.schema as { required: string[] }).required, ['name']);
    assert.deepEqual(JSON.parse(textOf(forAlice)), {
      action: 'accept',
      content: { name: 'alice', color: 'blue' },
    });
    assert.deepEqual(JSON.parse(textOf(forBob)), {
      action: 'accept',
      content: { name: 'bob', color: 'blue' },
    });

    // A question the server sends apart from the call goes to the only call in flight.
    const apart = await alice.client.callTool({ name: 'ask_apart', arguments: { question: 'Again?' } });
    assert.deepEqual(JSON.parse(textOf(apart)), {
      action: 'accept',
      content: { name: 'alice', color: 'blue' },
    });
    assert.equal(questions.at(-1)?.message, 'Again?');
    assert.equal(questions.at(-1)?.who, 'alice');

    // Sampling: the remote server's request runs on the upstream client's model.
    const thought = await bob.client.callTool({ name: 'think', arguments: { prompt: 'hello' } });
    assert.equal(textOf(thought), "bob-model: bob read 'hello' (Be brief.)");

    // Logs: the remote tool's messages reach the upstream client, at the level it set.
    await alice.client.setLoggingLevel('info');
    const done = await alice.client.callTool({ name: 'chatty', arguments: {} });
    assert.equal(textOf(done), 'done');
    assert.deepEqual(alice.logs, [{ level: 'info', data: 'starting', logger: 'chatty' }]);
    assert.deepEqual(bob.logs, []);
  });

  test('a caller that cannot answer: the server is told so, and the call fails cleanly', async (t) => {
    const fixture = await startHttpFixture('sessions');
    t.after(() => fixture.stop());
    const remote = await mcpServerTools({ url: fixture.url, protocol: 'legacy', id: 'remote' });
    t.after(() => remote.close());

    const result = await remote.call('ask', { question: 'Anyone there?' });
    assert.equal(result.isError, true);
    assert.match(
      result.content,
      /elicitation failed: .*toolbus cannot answer this elicitation for MCP server 'remote'/,
    );
    // Nothing about the caller crosses to the third-party server.
    assert.doesNotMatch(result.content, /127\.0\.0\.1|caller '/);

    const sampled = await remote.call('think', { prompt: 'hi' });
    assert.equal(sampled.isError, true);
    assert.match(sampled.content, /sampling failed: .*cannot answer this sampling request/);
  });

  test('a program answers through clientFeatures, over stdio too', async (t) => {
    const remote = await mcpServerTools({ ...stdioFixtureParams(), protocol: 'legacy', id: 'stdio-remote' });
    t.after(() => remote.close());
    const asked: ElicitationRequest[] = [];
    const logged: [ToolLogLevel, unknown][] = [];
    const features: ToolClientFeatures = {
      elicit: async (request) => {
        asked.push(request);
        return { action: 'decline' };
      },
      log: (level, data) => logged.push([level, data]),
    };
    const declined = await remote.call('ask', { question: 'Proceed?' }, { clientFeatures: features });
    assert.equal(declined.isError, false, declined.content);
    assert.deepEqual(JSON.parse(declined.content), { action: 'decline' });
    assert.equal(asked[0]?.message, 'Proceed?');

    const chatty = await remote.call('chatty', {}, { clientFeatures: features });
    assert.equal(chatty.content, 'done');
    assert.deepEqual(logged, [
      ['info', 'starting'],
      ['debug', { step: 2 }],
    ]);
  });
});
