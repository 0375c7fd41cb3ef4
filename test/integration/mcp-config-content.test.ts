/**
 * Resources and prompts from config, served by the bridge through the registry and by `toolbus up`'s
 * `/mcp`, checked with the official MCP client: `resource/<id>` items (static text and blob, a
 * template and a fixed URI read through a tool service on the bus, with the service's config values and
 * the caller's user), their problems, resources/updated and list_changed on config changes; `prompt`
 * tool items as MCP prompts without a model (arguments, filling, a missing argument, completion from
 * `enum`); and, behind the gateway, prompts filtered by a principal's tool policy.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createMcpServer } from '../../src/adapters/mcp/index.js';
import { MemoryBus } from '../../src/bus/index.js';
import { startSystem } from '../../src/cli/system.js';
import { MemoryConfigStore } from '../../src/config/index.js';
import { hashToken } from '../../src/policy/index.js';
import type { JsonObject } from '../../src/schema/index.js';
import { ToolRegistry } from '../../src/registry/index.js';
import { DynamicToolService, type ToolServiceInvoke } from '../../src/services/index.js';
import type { ToolSetOptions } from '../../src/tools/index.js';
import { homeIo } from '../support/cli.js';
import { waitFor } from '../fixtures/mcp-spawn.js';

const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

const REVIEW_PROMPT: JsonObject = {
  type: 'prompt',
  name: 'review',
  description: 'Review code in a language',
  system: 'You are a careful reviewer.',
  template: 'Review this {{language}} code: {{code}}',
  arguments: [
    { name: 'language', type: 'string', description: 'The language', enum: ['go', 'python', 'typescript'] },
    { name: 'code', type: 'string', description: 'The code' },
  ],
};

function textOf(contents: unknown): string | undefined {
  return (contents as { text?: string } | undefined)?.text;
}

async function registryWithItems(t: { after: (fn: () => Promise<void>) => void }) {
  const bus = new MemoryBus();
  const store = new MemoryConfigStore();
  const calls: { user: string; config: Record<string, unknown>; args: Record<string, unknown> }[] = [];
  const service = new DynamicToolService({
    bus,
    id: 'weather-service',
    topic: 'weather',
    invoke: (user, config, args) => {
      calls.push({ user, config, args });
      return JSON.stringify({ city: args['name'] ?? 'here', units: config['units'], celsius: 21 });
    },
  });
  await service.start();
  await store.put('tool-service', 'weather-service', {
    id: 'weather-service',
    'request-queue': 'non-persistent://tg/request/weather',
    'response-queue': 'non-persistent://tg/response/weather',
    'config-params': [{ name: 'units', required: true }],
  });
  await store.put('resource', 'readme', {
    uri: 'docs://readme',
    title: 'README',
    description: 'The project README',
    'mime-type': 'text/markdown',
    text: '# Hello',
  });
  await store.put('resource', 'logo', { uri: 'docs://logo', 'mime-type': 'image/png', blob: PNG });
  await store.put('resource', 'city', {
    'uri-template': 'weather://city/{name}',
    name: 'city-weather',
    description: 'The weather in a city',
    'mime-type': 'application/json',
    service: 'weather-service',
    units: 'metric',
    variables: [{ name: 'name', description: 'The city', enum: ['Paris', 'Quito', 'Porto'] }],
  });
  await store.put('resource', 'today', {
    uri: 'weather://today',
    'mime-type': 'application/json',
    service: 'weather-service',
    units: 'imperial',
  });
  await store.put('resource', 'broken', { uri: 'docs://broken', text: 'x', blob: 'AAAA' });
  await store.put('resource', 'orphan', {
    'uri-template': 'x://{a}',
    service: 'no-such-service',
  });
  await store.put('tool', 'review', REVIEW_PROMPT);
  // No model: the prompt tool is skipped (reported), the MCP prompt is served all the same.
  const registry = new ToolRegistry({ store, bus, debounceMs: 0 });
  await registry.start();
  t.after(async () => {
    await registry.close();
    await service.stop();
    await store.close();
    await bus.close();
  });
  return { registry, store, calls };
}

async function connect(
  t: { after: (fn: () => Promise<void>) => void },
  registry: ToolRegistry,
): Promise<Client> {
  const server = createMcpServer(registry.tools, {
    resources: registry.resources,
    prompts: registry.prompts,
  });
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'config-content', version: '1' });
  await client.connect(clientSide);
  t.after(() => client.close());
  return client;
}

describe('resource items and prompt items through the registry', { timeout: 30_000 }, () => {
  test('list, templates and reads: static text and blob, through the service with its config values', async (t) => {
    const { registry, calls } = await registryWithItems(t);
    const client = await connect(t, registry);
    const { resources } = await client.listResources();
    assert.deepEqual(
      resources.map((r) => r.uri),
      ['docs://logo', 'docs://readme', 'weather://today'],
    );
    assert.deepEqual(
      resources.find((r) => r.uri === 'docs://readme'),
      {
        uri: 'docs://readme',
        name: 'readme',
        title: 'README',
        description: 'The project README',
        mimeType: 'text/markdown',
        size: 7,
      },
    );
    assert.deepEqual((await client.listResourceTemplates()).resourceTemplates, [
      {
        uriTemplate: 'weather://city/{name}',
        name: 'city-weather',
        description: 'The weather in a city',
        mimeType: 'application/json',
      },
    ]);
    assert.deepEqual((await client.readResource({ uri: 'docs://readme' })).contents, [
      { uri: 'docs://readme', mimeType: 'text/markdown', text: '# Hello' },
    ]);
    assert.deepEqual((await client.readResource({ uri: 'docs://logo' })).contents, [
      { uri: 'docs://logo', mimeType: 'image/png', blob: PNG },
    ]);
    const quito = await client.readResource({ uri: 'weather://city/Quito' });
    assert.equal(quito.contents[0]?.mimeType, 'application/json');
    assert.deepEqual(JSON.parse(textOf(quito.contents[0]) ?? ''), {
      city: 'Quito',
      units: 'metric',
      celsius: 21,
    });
    const today = await client.readResource({ uri: 'weather://today' });
    assert.deepEqual(JSON.parse(textOf(today.contents[0]) ?? ''), {
      city: 'here',
      units: 'imperial',
      celsius: 21,
    });
    assert.deepEqual(calls[0]?.args, { name: 'Quito' });
    assert.deepEqual(calls[1]?.args, {});
    // A value the variable's enum does not allow: -32602 saying so, and the service is not called.
    await assert.rejects(client.readResource({ uri: 'weather://city/Lima' }), (error: unknown) => {
      const e = error as { code: number; message: string };
      assert.equal(e.code, -32602);
      assert.match(e.message, /resource 'weather:\/\/city\/Lima' \(config 'resource\/city'/);
      assert.match(e.message, /argument 'name'/);
      return true;
    });
    assert.equal(calls.length, 2);
    await assert.rejects(
      client.readResource({ uri: 'docs://broken' }),
      /Resource not found: docs:\/\/broken/,
    );
  });

  test('a bad item is reported under its key, naming the field; the others are served', async (t) => {
    const { registry } = await registryWithItems(t);
    const problems = registry.problems();
    const broken = problems.find((p) => p.key === 'resource/broken');
    assert.equal(broken?.severity, 'error');
    assert.equal(broken?.code, 'invalid-config');
    assert.match(broken?.message ?? '', /config 'resource\/broken': give exactly one of 'text', 'blob'/);
    const orphan = problems.find((p) => p.key === 'resource/orphan');
    assert.match(
      orphan?.message ?? '',
      /config 'resource\/orphan' references unknown tool service 'no-such-service'/,
    );
    const review = problems.find((p) => p.key === 'tool/review');
    assert.match(review?.message ?? '', /MCP clients still get it as a prompt/);
  });

  test('a filter decides by the item a read is served by, with overlapping templates', async (t) => {
    const { registry, store, calls } = await registryWithItems(t);
    // Both match data://42; the first in key order serves it.
    const read = { service: 'weather-service', units: 'metric' };
    await store.put('resource', 'a-secret', { 'uri-template': 'data://{id}', name: 'secret', ...read });
    await store.put('resource', 'b-public', { 'uri-template': 'data://{key}', name: 'public', ...read });
    await registry.refresh();
    const server = createMcpServer(registry.tools, {
      resources: registry.resources,
      resourceFilter: (name) => name === 'public',
    });
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'filtered', version: '1' });
    await client.connect(clientSide);
    t.after(() => client.close());
    assert.deepEqual(
      (await client.listResourceTemplates()).resourceTemplates.map((r) => r.name),
      ['public'],
    );
    await assert.rejects(client.readResource({ uri: 'data://42' }), /Resource not found/);
    assert.equal(calls.length, 0, 'the service was not called');
    assert.equal(registry.resources.resolve?.('data://42'), 'secret');
  });

  test('config changes: resources/updated to subscribers, list_changed for the set', async (t) => {
    const { registry, store } = await registryWithItems(t);
    const client = await connect(t, registry);
    const updated: string[] = [];
    let listChanged = 0;
    client.setNotificationHandler('notifications/resources/updated', (n) => void updated.push(n.params.uri));
    client.setNotificationHandler('notifications/resources/list_changed', () => void listChanged++);
    await client.subscribeResource({ uri: 'docs://readme' });
    await store.put('resource', 'readme', {
      uri: 'docs://readme',
      'mime-type': 'text/markdown',
      text: '# Bye',
    });
    await registry.refresh();
    assert.ok(await waitFor(() => updated.includes('docs://readme'), 5000, 10), 'no resources/updated');
    assert.equal(textOf((await client.readResource({ uri: 'docs://readme' })).contents[0]), '# Bye');
    // Another item changing tells nobody about readme again.
    const before = updated.length;
    await store.put('resource', 'logo', { uri: 'docs://logo', 'mime-type': 'image/gif', blob: 'R0lG' });
    await registry.refresh();
    await store.put('resource', 'notes', { uri: 'docs://notes', text: 'new' });
    await registry.refresh();
    assert.ok(await waitFor(() => listChanged >= 1, 5000, 10), 'no resources/list_changed');
    assert.equal(updated.length, before);
    assert.ok((await client.listResources()).resources.some((r) => r.uri === 'docs://notes'));
  });

  test('a prompt tool item is an MCP prompt without a model: list, get, missing argument, completion', async (t) => {
    const { registry } = await registryWithItems(t);
    assert.equal(registry.tools.get('review'), undefined, 'no model: no review tool');
    const client = await connect(t, registry);
    assert.deepEqual((await client.listPrompts()).prompts, [
      {
        name: 'review',
        description: 'Review code in a language',
        arguments: [
          { name: 'language', description: 'The language', required: true },
          { name: 'code', description: 'The code', required: true },
        ],
      },
    ]);
    const got = await client.getPrompt({ name: 'review', arguments: { language: 'go', code: 'x := 1' } });
    assert.deepEqual(got.messages, [
      { role: 'user', content: { type: 'text', text: 'You are a careful reviewer.' } },
      { role: 'user', content: { type: 'text', text: 'Review this go code: x := 1' } },
    ]);
    await assert.rejects(
      client.getPrompt({ name: 'review', arguments: { language: 'go' } }),
      (error: unknown) => {
        assert.equal((error as { code: number }).code, -32602);
        assert.match((error as Error).message, /argument 'code' is required/);
        return true;
      },
    );
    const languages = await client.complete({
      ref: { type: 'ref/prompt', name: 'review' },
      argument: { name: 'language', value: 'py' },
    });
    assert.deepEqual(languages.completion, { values: ['python'], total: 1, hasMore: false });
    const cities = await client.complete({
      ref: { type: 'ref/resource', uri: 'weather://city/{name}' },
      argument: { name: 'name', value: 'P' },
    });
    assert.deepEqual(cities.completion.values, ['Paris', 'Porto']);
    const free = await client.complete({
      ref: { type: 'ref/prompt', name: 'review' },
      argument: { name: 'code', value: 'x' },
    });
    assert.deepEqual(free.completion.values, []);
  });
});

/**
 * A registry with one template item, `paper://{id}`, read through a service answering with `invoke`,
 * and `toolSetOptions`; an MCP client connected to it. Stopped after the test.
 */
async function readThrough(
  t: { after: (fn: () => Promise<void>) => void },
  invoke: ToolServiceInvoke,
  toolSetOptions: ToolSetOptions,
) {
  const bus = new MemoryBus();
  const store = new MemoryConfigStore();
  const service = new DynamicToolService({ bus, id: 'paper-service', topic: 'paper', invoke });
  await service.start();
  await store.put('tool-service', 'paper-service', {
    id: 'paper-service',
    'request-queue': 'non-persistent://tg/request/paper',
    'response-queue': 'non-persistent://tg/response/paper',
  });
  await store.put('resource', 'paper', { 'uri-template': 'paper://{id}', service: 'paper-service' });
  const registry = new ToolRegistry({ store, bus, debounceMs: 0, toolSetOptions });
  await registry.start();
  t.after(async () => {
    await registry.close();
    await service.stop();
    await store.close();
    await bus.close();
  });
  return { client: await connect(t, registry), service };
}

describe('resource reads through a tool service run as calls of a ToolSet', { timeout: 30_000 }, () => {
  test("the registry's hooks see them and its output cap applies", async (t) => {
    const seen: { name: string; caller: string | undefined; truncated: number | undefined }[] = [];
    const { client } = await readThrough(t, () => 'x'.repeat(200_000), {
      maxOutputBytes: 1024,
      hooks: {
        onResult: ({ name, caller, result }) =>
          void seen.push({ name, caller, truncated: result.truncatedBytes }),
      },
    });
    const text = textOf((await client.readResource({ uri: 'paper://big' })).contents[0]) ?? '';
    assert.ok(Buffer.byteLength(text) <= 1024, `${Buffer.byteLength(text)} bytes`);
    assert.match(text, /bytes cut: the output exceeded the 1024-byte limit/);
    assert.equal(seen.length, 1);
    assert.equal(seen[0]?.name, 'resource_paper');
    assert.equal(seen[0]?.caller, 'mcp');
    assert.ok((seen[0]?.truncated ?? 0) > 0);
  });

  test('a slow service or a dead one: a clear -32603 naming the resource, in bounded time', async (t) => {
    const { client, service } = await readThrough(
      t,
      (_user, _config, _args, { signal }) =>
        new Promise((resolve) => signal.addEventListener('abort', () => resolve('too late'))),
      { timeoutMs: 300 },
    );
    const failed = (why: RegExp) => (error: unknown) => {
      const e = error as { code: number; message: string };
      assert.equal(e.code, -32603);
      assert.match(
        e.message,
        /^resource 'paper:\/\/x' \(config 'resource\/paper', read through tool service 'paper-service'\): /,
      );
      assert.match(e.message, why);
      return true;
    };
    // Slow: the set's timeout ends the call.
    await assert.rejects(client.readResource({ uri: 'paper://x' }), failed(/timed out after 300 ms/));
    // Dead: nobody takes the request.
    await service.stop();
    await assert.rejects(client.readResource({ uri: 'paper://x' }), failed(/is unavailable/));
  });
});

describe("toolbus up's /mcp", { timeout: 60_000 }, () => {
  test('serves resource and prompt items; prompts and resources follow the caller’s tool policy', async (t) => {
    const ADMIN = 'mcp-content-admin-token-0123456789';
    const BOB = 'mcp-content-bob-token-0123456789ab';
    const home = await mkdtemp(join(tmpdir(), 'toolbus-mcp-content-'));
    const { io, errors } = homeIo(home);
    const system = await startSystem(
      { examples: true, token: ADMIN, agentUnavailableMessage: 'no model' },
      io,
    );
    t.after(async () => {
      await system.close();
      await rm(home, { recursive: true, force: true });
    });
    await system.store.put('principal', 'bob', {
      roles: ['caller'],
      tokenHash: hashToken(BOB),
      tools: ['tell-*'],
    });
    await system.store.put('resource', 'joke', {
      'uri-template': 'joke://{topic}',
      description: 'A joke on a topic',
      'mime-type': 'text/plain',
      service: 'joke-service',
      style: 'pun',
      variables: [{ name: 'topic', enum: ['cats', 'dogs'] }],
    });
    await system.store.put('resource', 'tell-news', {
      uri: 'news://today',
      'mime-type': 'text/plain',
      text: 'Nothing happened.',
    });
    await system.store.put('tool', 'review', REVIEW_PROMPT);
    await system.store.put('tool', 'tell-story', { ...REVIEW_PROMPT, name: 'tell-story' });
    await system.registry.refresh();
    const url = await system.gateway.listen({ host: '127.0.0.1', port: 0 });
    const connectAs = async (token: string): Promise<Client> => {
      const client = new Client({ name: 'up', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      t.after(() => client.close());
      return client;
    };
    const admin = await connectAs(ADMIN);
    assert.deepEqual(
      (await admin.listPrompts()).prompts.map((p) => p.name).sort(),
      ['review', 'tell-story'],
      errors(),
    );
    const joke = await admin.readResource({ uri: 'joke://cats' });
    // The joke service's answer, with its style from the item and the caller's user from the gateway.
    assert.match(textOf(joke.contents[0]) ?? '', /^Hey anonymous! Here's a pun for you:/);
    const bob = await connectAs(BOB);
    assert.deepEqual(
      (await bob.listPrompts()).prompts.map((p) => p.name),
      ['tell-story'],
    );
    await assert.rejects(
      bob.getPrompt({ name: 'review', arguments: { language: 'go', code: '' } }),
      /unknown prompt/,
    );
    const hidden = await bob.complete({
      ref: { type: 'ref/prompt', name: 'review' },
      argument: { name: 'language', value: '' },
    });
    assert.deepEqual(hidden.completion.values, []);
    // Bob's key may call 'tell-*' tools only: the joke resource, read through a tool service, is
    // unknown to him, as is its template's completion; the 'tell-news' resource is his to read.
    assert.deepEqual((await bob.listResourceTemplates()).resourceTemplates, []);
    assert.deepEqual(
      (await bob.listResources()).resources.map((r) => r.uri),
      ['news://today'],
    );
    await assert.rejects(bob.readResource({ uri: 'joke://cats' }), (error: unknown) => {
      assert.match((error as Error).message, /not found/i);
      return true;
    });
    await assert.rejects(bob.subscribeResource({ uri: 'joke://cats' }), /not found/i);
    const topics = {
      ref: { type: 'ref/resource' as const, uri: 'joke://{topic}' },
      argument: { name: 'topic', value: 'c' },
    };
    assert.deepEqual((await admin.complete(topics)).completion.values, ['cats']);
    const noTopics = await bob.complete({
      ref: { type: 'ref/resource', uri: 'joke://{topic}' },
      argument: { name: 'topic', value: 'c' },
    });
    assert.deepEqual(noTopics.completion.values, []);
    assert.equal(textOf((await bob.readResource({ uri: 'news://today' })).contents[0]), 'Nothing happened.');
    assert.deepEqual(
      (await admin.listResources()).resources.map((r) => r.uri),
      ['news://today'],
    );
  });
});
