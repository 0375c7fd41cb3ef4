/**
 * @module Structured results over MCP, both ways. Served: a tool with an output schema lists its
 * `outputSchema`, and its results come with `structuredContent` beside the text, which the official MCP
 * client checks against that schema; a result that does not match is the tool's error, never a bad
 * `structuredContent`. Used: an MCP server's `outputSchema` becomes the toolbus tool's, so its
 * `structuredContent` is checked and kept as the result's `structured` value. A tool-service descriptor's
 * `output-schema` does the same for a service's JSON answer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { createMcpServer, mcpServerTools } from '../../src/adapters/mcp/index.js';
import { MemoryBus } from '../../src/bus/index.js';
import { DynamicToolService, createToolServiceTool } from '../../src/services/index.js';
import { FunctionTool, LiveToolSet, ToolSet } from '../../src/tools/index.js';
import { stdioFixtureParams } from '../fixtures/mcp-spawn.js';

const forecast = z.object({ city: z.string(), celsius: z.number() });

test('the bridge serves outputSchema and structuredContent; the official client validates them', async (t) => {
  const tools = new LiveToolSet([
    new FunctionTool(({ city }: { city: string }) => ({ city, celsius: 21 }), {
      name: 'weather',
      description: 'The weather in a city',
      parameters: z.object({ city: z.string() }),
      outputSchema: forecast,
    }),
    new FunctionTool(() => ({ city: 'Nowhere', celsius: 'unknown' }), {
      name: 'broken-weather',
      description: 'Answers in the wrong shape',
      parameters: z.object({}),
      outputSchema: forecast,
    }),
    new FunctionTool(() => 'plain text', {
      name: 'plain',
      description: 'No schema',
      parameters: z.object({}),
    }),
  ]);
  const server = createMcpServer(tools, { name: 'structured-test' });
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(clientSide);
  t.after(() => client.close());

  const listed = await client.listTools();
  const weather = listed.tools.find((tool) => tool.name === 'weather');
  assert.equal(weather?.outputSchema?.type, 'object');
  assert.deepEqual(weather?.outputSchema?.required, ['city', 'celsius']);
  assert.equal(listed.tools.find((tool) => tool.name === 'plain')?.outputSchema, undefined);

  // The client checks structuredContent against the listed outputSchema (it throws on a mismatch, or on
  // a result of such a tool without structuredContent).
  const result = await client.callTool({ name: 'weather', arguments: { city: 'Quito' } });
  assert.equal(result.isError, undefined);
  assert.deepEqual(result.structuredContent, { city: 'Quito', celsius: 21 });
  assert.deepEqual(result.content, [{ type: 'text', text: '{"city":"Quito","celsius":21}' }]);

  const broken = await client.callTool({ name: 'broken-weather', arguments: {} });
  assert.equal(broken.isError, true);
  assert.equal(broken.structuredContent, undefined);
  assert.match(
    (broken.content as { text: string }[])[0]!.text,
    /its result does not match its output schema: 'celsius' must be number, got string/,
  );
  const plain = await client.callTool({ name: 'plain', arguments: {} });
  assert.equal(plain.structuredContent, undefined);
});

test("an MCP server's outputSchema is the tool's: structuredContent is checked and kept as structured", async (t) => {
  const mcp = await mcpServerTools({ ...stdioFixtureParams(), id: 'fixture' });
  t.after(() => mcp.close());
  const add = mcp.get('add');
  assert.equal(add?.outputSchema?.type, 'object');
  assert.equal(add?.outputSchema?.['$schema'], undefined);
  const result = await new ToolSet([add!]).call('add', { a: 2, b: 3 });
  assert.equal(result.isError, false, result.content);
  assert.deepEqual(result.structured, { sum: 5 });
  assert.equal(result.content, '{"sum":5}');
});

test("a tool-service descriptor's output-schema checks the service's JSON answer", async (t) => {
  const bus = new MemoryBus();
  const queues = { requestQueue: 'request:tg:forecast', responseQueue: 'response:tg:forecast' };
  let answer: unknown = { city: 'Lima', celsius: 18 };
  const service = new DynamicToolService({ bus, ...queues, invoke: () => answer });
  await service.start();
  t.after(async () => {
    await service.stop();
    await bus.close();
  });
  const { tool } = createToolServiceTool({
    bus,
    service: { id: 'forecast', 'request-queue': queues.requestQueue, 'response-queue': queues.responseQueue },
    tool: {
      type: 'tool-service',
      name: 'forecast',
      description: 'The forecast',
      service: 'forecast',
      'output-schema': {
        type: 'object',
        properties: { city: { type: 'string' }, celsius: { type: 'number' } },
        required: ['city', 'celsius'],
      },
      arguments: [],
    },
  });
  const tools = new ToolSet([tool]);
  const ok = await tools.call('forecast', {});
  assert.deepEqual(ok.structured, { city: 'Lima', celsius: 18 });
  answer = 'sunny';
  const bad = await tools.call('forecast', {});
  assert.equal(bad.error?.code, 'tool-error');
  assert.match(bad.content, /not JSON \("sunny"\)/);
  assert.throws(
    () =>
      createToolServiceTool({
        bus,
        service: {
          id: 'forecast',
          'request-queue': queues.requestQueue,
          'response-queue': queues.responseQueue,
        },
        tool: {
          type: 'tool-service',
          name: 'x',
          description: 'd',
          service: 'forecast',
          'output-schema': 'object',
        },
      }),
    /field 'output-schema' must be a JSON Schema object/,
  );
});
