/**
 * The `tool-service` tool type end to end: descriptors from the example JSON files, the joke service,
 * user and config provenance, many tools on one service, and the checks against the service.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { MemoryBus } from '../../src/bus/index.js';
import {
  DynamicToolService,
  ToolServiceClientCache,
  createToolServiceTool,
  parseToolServiceDescriptor,
} from '../../src/services/index.js';
import { ToolError, ToolSet } from '../../src/tools/index.js';
import { ToolbusError } from '../../src/errors/index.js';
import { createJokeService } from '../../examples/joke-service/service.js';
import streamingJokeService from '../../examples/joke-service/streaming-service.js';
import jokeService from '../../examples/joke-service/service.js';

const example = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`../../examples/joke-service/${name}`, import.meta.url), 'utf8'));

const jokeServiceJson = example('joke-service.json');
const tellJokeJson = example('tell-joke.json');
const tellDadJokeJson = example('tell-dad-joke.json');

async function setup(t: { after: (fn: () => unknown) => void }, service = jokeService) {
  const bus = new MemoryBus();
  const server = service(bus);
  await server.start();
  const clients = new ToolServiceClientCache(bus);
  t.after(async () => {
    await clients.close();
    await server.stop();
    await bus.close();
  });
  return { bus, server, clients };
}

/** A service that echoes what it received, to check provenance of user, config and arguments. */
function echoService(bus: MemoryBus, id: string, topic: string): DynamicToolService {
  return new DynamicToolService({
    bus,
    id,
    topic,
    invoke: (user, config, args) => ({ user, config, args }),
  });
}

describe('tool-service tools', { timeout: 20_000 }, () => {
  test('the seed joke tools: schema for the model, user greeting, style from config', async (t) => {
    const { clients } = await setup(t);
    const { tool, warnings } = createToolServiceTool({
      clients,
      service: jokeServiceJson,
      tool: tellJokeJson,
    });
    assert.deepEqual(warnings, []);
    assert.deepEqual(tool.schema, {
      name: 'tell-joke',
      description: 'Tell a joke on a given topic',
      parameters: {
        type: 'object',
        properties: {
          topic: { type: 'string', description: 'The topic for the joke (e.g., programming, animals, food)' },
        },
        required: ['topic'],
        additionalProperties: false,
      },
      strict: false,
    });
    const pun = await tool.runJson({ topic: 'programming' }, AbortSignal.timeout(5_000), { user: 'alice' });
    assert.match(String(pun), /^Hey alice! Here's a pun for you:\n\n\S/);
    const dad = createToolServiceTool({ clients, service: jokeServiceJson, tool: tellDadJokeJson }).tool;
    const reply = await dad.runJson({ topic: 'cats' }, undefined, { user: 'bob' });
    assert.match(String(reply), /^Hey bob! Here's a dad joke for you:/);
    // Both tools share one client (one response subscription) for the one service.
    assert.equal(clients.size, 1);
  });

  test('through a ToolSet: user comes from the call options, results and errors follow the contract', async (t) => {
    const { clients } = await setup(t);
    const tools = new ToolSet([
      createToolServiceTool({ clients, service: jokeServiceJson, tool: tellJokeJson }).tool,
      createToolServiceTool({ clients, service: jokeServiceJson, tool: tellDadJokeJson }).tool,
    ]);
    const ok = await tools.call('tell-dad-joke', '{"topic":"food"}', { user: 'carol' });
    assert.equal(ok.isError, false);
    assert.match(ok.content, /^Hey carol! Here's a dad joke for you:/);
    const bad = await tools.call('tell-joke', '{"topic":42}', { user: 'carol' });
    assert.equal(bad.isError, true);
    assert.equal(bad.error?.code, 'invalid-arguments');
    assert.match(bad.content, /topic/);
  });

  test('many tools on one service, each with its own config values', async (t) => {
    const bus = new MemoryBus();
    const server = echoService(bus, 'rag', 'rag');
    await server.start();
    const clients = new ToolServiceClientCache(bus);
    t.after(async () => {
      await clients.close();
      await server.stop();
      await bus.close();
    });
    const service = {
      id: 'rag',
      'request-queue': 'non-persistent://tg/request/rag',
      'response-queue': 'non-persistent://tg/response/rag',
      'config-params': [{ name: 'collection', required: true }, { name: 'limit' }],
    };
    const collections = ['customers', 'products', 'orders', 'invoices', 'tickets'];
    const tools = collections.map(
      (collection, i) =>
        createToolServiceTool({
          clients,
          service,
          tool: {
            type: 'tool-service',
            name: `query-${collection}`,
            description: `Query the ${collection} knowledge base`,
            service: 'rag',
            collection,
            ...(i === 0 ? { limit: 3 } : {}),
            arguments: [{ name: 'question', type: 'string', description: 'The question' }],
          },
        }).tool,
    );
    const replies = await Promise.all(
      tools.map((tool) => tool.runJson({ question: 'top complaints?' }, undefined, { user: 'alice' })),
    );
    replies.forEach((reply, i) => {
      const echoed = JSON.parse(String(reply)) as {
        user: string;
        config: Record<string, unknown>;
        args: unknown;
      };
      assert.equal(echoed.user, 'alice');
      assert.deepEqual(
        echoed.config,
        i === 0 ? { collection: collections[i], limit: 3 } : { collection: collections[i] },
      );
      assert.deepEqual(echoed.args, { question: 'top complaints?' });
    });
    assert.equal(clients.size, 1);
  });

  test('the model cannot set user or a config param; values come from the context and the descriptor', async (t) => {
    const bus = new MemoryBus();
    const server = echoService(bus, 'joke-service', 'joke');
    await server.start();
    const clients = new ToolServiceClientCache(bus);
    t.after(async () => {
      await clients.close();
      await server.stop();
      await bus.close();
    });
    const { tool } = createToolServiceTool({ clients, service: jokeServiceJson, tool: tellJokeJson });
    // Extra keys named like the envelope fields are refused, and nothing reaches the service.
    for (const args of [
      { topic: 'x', user: 'mallory' },
      { topic: 'x', style: 'one-liner' },
    ]) {
      await assert.rejects(tool.runJson(args, undefined, { user: 'alice' }), (e: unknown) => {
        assert.ok(e instanceof ToolError);
        assert.equal(e.code, 'invalid-arguments');
        return true;
      });
    }
    assert.equal(server.stats().received, 0);
    // An argument declared with a config param's name: the model's value stays in 'arguments'.
    const shadowing = createToolServiceTool({
      clients,
      service: jokeServiceJson,
      tool: {
        ...(tellJokeJson as object),
        name: 'shadowing-joke',
        arguments: [
          { name: 'topic', type: 'string', description: 'topic' },
          { name: 'style', type: 'string', description: 'a style the model would like' },
        ],
      },
    });
    assert.match(shadowing.warnings.join('\n'), /argument 'style' has the name of a config param/);
    const echoed = JSON.parse(
      String(await shadowing.tool.runJson({ topic: 'x', style: 'one-liner' }, undefined, { user: 'alice' })),
    ) as { user: string; config: Record<string, unknown>; args: Record<string, unknown> };
    assert.deepEqual(echoed.config, { style: 'pun' });
    assert.equal(echoed.args['style'], 'one-liner');
    assert.equal(echoed.user, 'alice');
    // No user in the context: the service gets "", never a model-chosen value.
    const anonymous = JSON.parse(String(await tool.runJson({ topic: 'x' }))) as { user: string };
    assert.equal(anonymous.user, '');
  });

  test('a missing required config param and an unknown service are invalid-config errors', () => {
    const bus = new MemoryBus();
    const service = {
      id: 'custom-rag',
      'request-queue': 'non-persistent://tg/request/custom-rag',
      'response-queue': 'non-persistent://tg/response/custom-rag',
      'config-params': [{ name: 'collection', required: true }],
    };
    const tool = {
      type: 'tool-service',
      name: 'query-customers',
      description: 'Query the customer knowledge base',
      service: 'custom-rag',
      arguments: [{ name: 'question', type: 'string', description: 'The question' }],
    };
    assert.throws(
      () => createToolServiceTool({ bus, service, tool }),
      (e: unknown) =>
        e instanceof ToolbusError &&
        e.code === 'invalid-config' &&
        e.message ===
          "tool 'query-customers': missing required config param 'collection' of tool service 'custom-rag'",
    );
    assert.throws(
      () => createToolServiceTool({ bus, service: undefined, tool }),
      (e: unknown) =>
        e instanceof ToolbusError &&
        e.code === 'invalid-config' &&
        /references unknown tool service 'custom-rag'/.test(e.message),
    );
    assert.throws(
      () =>
        createToolServiceTool({
          bus,
          service: { ...service, id: 'other' },
          tool: { ...tool, collection: 'c' },
        }),
      (e: unknown) => e instanceof ToolbusError && /but was given service 'other'/.test(e.message),
    );
  });

  test("config params named like Object.prototype members: only the descriptor's own values are forwarded", async (t) => {
    const bus = new MemoryBus();
    const server = echoService(bus, 'scoped', 'scoped');
    await server.start();
    const clients = new ToolServiceClientCache(bus);
    t.after(async () => {
      await clients.close();
      await server.stop();
      await bus.close();
    });
    const service = {
      id: 'scoped',
      'request-queue': 'request:tg:scoped',
      'response-queue': 'response:tg:scoped',
      'config-params': ['__proto__', 'toString'],
    };
    // JSON.parse keeps "__proto__" as an own key, as a config store delivers it.
    const tool = JSON.parse(
      '{"type":"tool-service","name":"scoped-tool","description":"d","service":"scoped","__proto__":"scope-a"}',
    ) as Record<string, unknown>;
    const created = createToolServiceTool({ clients, service, tool });
    const echoed = JSON.parse(String(await created.tool.runJson({}))) as { config: object };
    assert.deepEqual(Object.entries(echoed.config), [['__proto__', 'scope-a']]);
    // A required param the descriptor leaves out is missing, even if Object.prototype has that name.
    assert.throws(
      () =>
        createToolServiceTool({
          clients,
          service: { ...service, 'config-params': [{ name: 'toString', required: true }] },
          tool,
        }),
      (e: unknown) => e instanceof ToolbusError && /missing required config param 'toString'/.test(e.message),
    );
  });

  test('keys that are not config params are reported as warnings, not silently dropped', () => {
    const bus = new MemoryBus();
    const { warnings } = createToolServiceTool({
      bus,
      service: jokeServiceJson,
      tool: { ...(tellJokeJson as object), colour: 'blue', collection: 'x' },
    });
    assert.equal(warnings.length, 2);
    assert.match(
      warnings[0]!,
      /tool 'tell-joke': key 'colour' is not a config param of tool service 'joke-service' \(its params: 'style'\)/,
    );
    assert.match(warnings[1]!, /key 'collection'/);
  });

  test('argument types become JSON Schema: string, number, integer, boolean, object, array', () => {
    const bus = new MemoryBus();
    const { tool } = createToolServiceTool({
      bus,
      service: parseToolServiceDescriptor({
        id: 's',
        'request-queue': 'request:tg:s',
        'response-queue': 'response:tg:s',
      }),
      tool: {
        type: 'tool-service',
        name: 'typed',
        description: 'd',
        service: 's',
        arguments: [
          { name: 's', type: 'string', description: 'a string' },
          { name: 'n', type: 'number', description: '' },
          { name: 'i', type: 'integer', description: 'an integer' },
          { name: 'b', type: 'boolean', description: 'a flag' },
          { name: 'o', type: 'object', description: 'an object' },
          { name: 'a', type: 'array', description: 'a list', required: false },
        ],
      },
    });
    assert.deepEqual(tool.schema.parameters, {
      type: 'object',
      properties: {
        s: { type: 'string', description: 'a string' },
        n: { type: 'number' },
        i: { type: 'integer', description: 'an integer' },
        b: { type: 'boolean', description: 'a flag' },
        o: { type: 'object', description: 'an object' },
        a: { type: 'array', description: 'a list', items: {} },
      },
      required: ['s', 'n', 'i', 'b', 'o'],
      additionalProperties: false,
    });
  });

  test('the streamed joke variant sends the reply in several chunks that join to the full reply', async (t) => {
    const { clients } = await setup(t, (bus) =>
      createJokeService(bus, { streaming: true, chunkDelayMs: 1, random: () => 0 }),
    );
    const client = clients.get('non-persistent://tg/request/joke', 'non-persistent://tg/response/joke');
    const chunks: string[] = [];
    for await (const chunk of client.stream('dave', { style: 'one-liner' }, { topic: 'programming' }))
      chunks.push(chunk);
    assert.ok(chunks.length > 3, `chunks: ${chunks.length}`);
    assert.equal(chunks.join(''), "Hey dave! Here's a one-liner for you:\n\nIt works on my machine.");
    // The same tool descriptors work unchanged against the streamed variant.
    const { tool } = createToolServiceTool({ clients, service: jokeServiceJson, tool: tellDadJokeJson });
    assert.match(
      String(await tool.runJson({ topic: 'dogs' }, undefined, { user: 'erin' })),
      /^Hey erin! Here's a dad joke/,
    );
  });

  test('the streaming example module works as a `toolbus service` module', async (t) => {
    const { clients } = await setup(t, streamingJokeService);
    const { tool } = createToolServiceTool({ clients, service: jokeServiceJson, tool: tellJokeJson });
    assert.match(
      String(await tool.runJson({ topic: 'llamas' }, undefined, { user: 'fay' })),
      /^Hey fay! Here's a pun/,
    );
  });

  test('the joke service rejects an unknown style with a tool-service-error the model can read', async (t) => {
    const { clients } = await setup(t);
    const { tool } = createToolServiceTool({
      clients,
      service: jokeServiceJson,
      tool: { ...(tellJokeJson as object), name: 'bad-style', style: 'limerick' },
    });
    await assert.rejects(tool.runJson({ topic: 'x' }), (e: unknown) => {
      assert.ok(e instanceof ToolError);
      assert.equal(e.code, 'tool-error');
      assert.match(e.message, /style' must be one of pun, dad-joke, one-liner, got "limerick"/);
      return true;
    });
  });
});
