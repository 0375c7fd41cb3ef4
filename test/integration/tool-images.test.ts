/**
 * Images end to end: the reference MCP server's image tool, called by a `ToolUseAgent` through toolbus,
 * reaches an OpenAI-compatible server as an image part of a user message after the tool message (for a
 * vision model), or as text (for any other); and toolbus's MCP bridge serves a tool's parts to the
 * official MCP client as MCP content.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { createMcpServer, mcpServerTools } from '../../src/adapters/mcp/index.js';
import { ToolUseAgent } from '../../src/agents/index.js';
import { OpenAIChatCompletionClient } from '../../src/models/openai/index.js';
import { FunctionTool, ToolSet } from '../../src/tools/index.js';
import { everythingParams } from '../fixtures/mcp-spawn.js';
import { chatCompletion, startFakeOpenAIServer } from '../fixtures/fake-openai-server.js';

type WireMessage = { role: string; content: unknown; tool_call_id?: string };

test(
  'the everything server image, through a ToolUseAgent, reaches the model as an image part',
  { timeout: 60_000 },
  async (t) => {
    const mcp = await mcpServerTools({
      ...everythingParams(),
    });
    t.after(() => mcp.close());
    const server = await startFakeOpenAIServer();
    t.after(() => server.close());

    const ask = async (vision: boolean): Promise<WireMessage[]> => {
      server.reply(
        { json: chatCompletion({ toolCalls: [{ id: 'call-1', name: 'get-tiny-image', arguments: '{}' }] }) },
        { json: chatCompletion({ content: 'A tiny image.' }) },
      );
      const before = server.requests.length;
      const model = new OpenAIChatCompletionClient({
        model: 'gpt-4o',
        baseURL: server.baseURL,
        apiKey: 'sk-test',
        modelInfo: { vision },
      });
      const agent = new ToolUseAgent({ name: 'viewer', model, tools: mcp });
      assert.equal(await agent.run('What does the tiny image show?'), 'A tiny image.');
      const second = server.requests[before + 1];
      assert.ok(second?.body, 'the model was asked a second time, with the tool result');
      return second.body['messages'] as WireMessage[];
    };

    const messages = await ask(true);
    const toolAt = messages.findIndex((m) => m.role === 'tool');
    assert.ok(toolAt > 0, JSON.stringify(messages));
    assert.equal(messages[toolAt]!.tool_call_id, 'call-1');
    assert.match(String(messages[toolAt]!.content), /\[image: image\/png, \d+ bytes\]/);
    const user = messages[toolAt + 1];
    assert.equal(user?.role, 'user', 'a user message with the image follows the tool message');
    const parts = user.content as { type: string; text?: string; image_url?: { url: string } }[];
    assert.equal(parts[0]?.type, 'text');
    assert.match(parts[0]!.text!, /returned by get-tiny-image \(call call-1\)/);
    assert.equal(parts[1]?.type, 'image_url');
    assert.match(parts[1]!.image_url!.url, /^data:image\/png;base64,[A-Za-z0-9+/]+=*$/);

    // A model without vision gets the text alone.
    const blind = await ask(false);
    assert.equal(blind.filter((m) => m.role === 'user').length, 1, JSON.stringify(blind));
    assert.match(String(blind.find((m) => m.role === 'tool')?.content), /\[image: image\/png/);
  },
);

test('the MCP bridge serves a tool result made of parts as MCP content to the official client', async (t) => {
  const png =
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
  const chart = new FunctionTool(
    () => [
      { type: 'text', text: 'Sales' },
      { type: 'image', data: png, mimeType: 'image/png' },
      { type: 'resource', uri: 'file:///sales.csv', mimeType: 'text/csv', text: 'jan,1\n' },
    ],
    { name: 'chart', description: 'Draws the sales chart', parameters: z.object({}) },
  );
  const bridge = createMcpServer(new ToolSet([chart]));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await bridge.connect(serverSide);
  const client = new Client({ name: 'probe', version: '1.0.0' });
  await client.connect(clientSide);
  t.after(async () => {
    await client.close();
    await bridge.close();
  });
  const result = await client.callTool({ name: 'chart', arguments: {} });
  assert.deepEqual(result.content, [
    { type: 'text', text: 'Sales' },
    { type: 'image', data: png, mimeType: 'image/png' },
    { type: 'resource', resource: { uri: 'file:///sales.csv', mimeType: 'text/csv', text: 'jan,1\n' } },
  ]);
  assert.notEqual(result.isError, true);
});
