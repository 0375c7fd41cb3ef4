/**
 * `tools/list` keeps a tool's `$schema`: a raw JSON Schema that declares its dialect is served with it,
 * and an MCP server's draft-07 tool proxied through toolbus (`mcpServerTools`, then the bridge) stays
 * draft-07, while the model-facing schema leaves it out on purpose. Checked with the official client.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, InMemoryTransport, type Tool } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { createMcpHttpHandler, createMcpServer, mcpServerTools } from '../../src/adapters/mcp/index.js';
import { FunctionTool, LiveToolSet, decorateTool } from '../../src/tools/index.js';

const DRAFT_07 = 'http://json-schema.org/draft-07/schema#';
const DRAFT_2020 = 'https://json-schema.org/draft/2020-12/schema';

async function listed(t: { after: (fn: () => Promise<void>) => void }, tools: LiveToolSet): Promise<Tool[]> {
  const server = createMcpServer(tools);
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'dialect-test', version: '1' });
  await client.connect(clientSide);
  t.after(() => client.close());
  return (await client.listTools()).tools;
}

const draft07Tool = new FunctionTool(({ n }: { n?: number }) => `n=${String(n)}`, {
  name: 'legacy',
  description: 'A draft-07 schema with definitions',
  parameters: {
    $schema: DRAFT_07,
    type: 'object',
    definitions: { count: { type: 'integer', minimum: 0 } },
    properties: { n: { $ref: '#/definitions/count' } },
    additionalProperties: false,
  },
});

test('a raw schema’s $schema is listed; zod tools list none; the model-facing schema has none', async (t) => {
  const tools = new LiveToolSet([
    draft07Tool,
    new FunctionTool(() => 'ok', {
      name: 'modern',
      description: 'A 2020-12 schema with $defs',
      parameters: {
        $schema: DRAFT_2020,
        type: 'object',
        $defs: { address: { type: 'object', properties: { city: { type: 'string' } } } },
        properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
        additionalProperties: false,
      },
    }),
    new FunctionTool(() => 'ok', {
      name: 'zodded',
      description: 'zod',
      parameters: z.object({ a: z.string() }),
    }),
  ]);
  const list = await listed(t, tools);
  const byName = new Map(list.map((tool) => [tool.name, tool]));
  assert.equal(byName.get('legacy')?.inputSchema.$schema, DRAFT_07);
  assert.deepEqual(byName.get('legacy')?.inputSchema['definitions'], {
    count: { type: 'integer', minimum: 0 },
  });
  const modern = byName.get('modern')?.inputSchema;
  assert.equal(modern?.$schema, DRAFT_2020);
  assert.ok(modern?.['$defs']);
  assert.equal(modern?.['additionalProperties'], false);
  assert.equal(byName.get('zodded')?.inputSchema.$schema, undefined);
  assert.equal(draft07Tool.schema.parameters['$schema'], undefined, 'the model-facing schema left it out');
  // A decorated tool (a config item's tags) keeps its inner tool's dialect.
  assert.equal(decorateTool(draft07Tool, { tags: ['old'] }).schemaDialect, DRAFT_07);
  // Validation follows the declared dialect: `definitions` resolve, and a negative count is refused.
  assert.equal(await draft07Tool.runJson({ n: 2 }), 'n=2');
  await assert.rejects(draft07Tool.runJson({ n: -1 }), /invalid arguments/);
});

test('a proxied MCP server’s draft-07 tool is served again as draft-07', async (t) => {
  // The upstream server: toolbus's own bridge over HTTP, serving the draft-07 tool.
  const upstream = createMcpHttpHandler(new LiveToolSet([draft07Tool]));
  const http = createServer((req, res) => void upstream(req, res));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    await upstream.close();
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  });
  const remote = await mcpServerTools({
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
  });
  t.after(() => remote.close());
  const proxied = remote.tools.list()[0];
  assert.equal(proxied?.schemaDialect, DRAFT_07);
  const list = await listed(t, new LiveToolSet(remote.tools.list()));
  assert.equal(list[0]?.inputSchema.$schema, DRAFT_07);
  assert.equal(list[0]?.name, 'legacy');
});
