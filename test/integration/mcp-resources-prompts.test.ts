/**
 * Resources, prompts and completion served by the bridge from the code API (`ResourceSet`,
 * `PromptSet`), checked with the official MCP client: capabilities, list, templates, read (text, blob,
 * template variables, -32002 for an unknown URI), subscribe/unsubscribe with `resources/updated`,
 * `list_changed` for both, prompts/get with arguments and media, -32602 for a missing required argument
 * or an unknown prompt, completion (filtered, capped at 100 with total and hasMore) and a prompt filter.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  PromptSet,
  ResourceSet,
  createMcpHttpHandler,
  createMcpServer,
  type McpBridgeOptions,
  type ResourceProvider,
} from '../../src/adapters/mcp/index.js';
import { LiveToolSet } from '../../src/tools/index.js';
import { waitFor } from '../fixtures/mcp-spawn.js';
import { listenMcp } from '../support/mcp-http.js';

const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const CITIES = Array.from({ length: 150 }, (_, i) => `city-${String(i).padStart(3, '0')}`);

function makeResources(): ResourceSet {
  return new ResourceSet({
    resources: [
      { uri: 'test://text', name: 'text', description: 'Some text', mimeType: 'text/plain', text: 'hello' },
      { uri: 'test://png', name: 'png', mimeType: 'image/png', blob: PNG },
      { uri: 'test://clock', name: 'clock', mimeType: 'text/plain', read: () => 'tick' },
    ],
    templates: [
      {
        uriTemplate: 'test://city/{name}/weather',
        name: 'weather',
        mimeType: 'application/json',
        read: (_uri, { name }) => (name === 'nowhere' ? undefined : JSON.stringify({ name, celsius: 20 })),
        complete: { name: CITIES },
      },
    ],
  });
}

function makePrompts(): PromptSet {
  return new PromptSet([
    { name: 'hello', description: 'Says hello', get: () => 'Hello there.' },
    {
      name: 'review',
      title: 'Code review',
      description: 'Review code in a language',
      arguments: [
        { name: 'language', description: 'The language', required: true },
        { name: 'style', description: 'How strict' },
      ],
      complete: { language: ['go', 'python', 'typescript', 'Pascal'] },
      get: ({ language, style }) => ({
        description: 'A review request',
        messages: [
          {
            role: 'user',
            content: { type: 'text', text: `Review this ${language} code (${style ?? 'normal'}).` },
          },
          { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
          {
            role: 'assistant',
            content: { type: 'resource', uri: 'test://text', mimeType: 'text/plain', text: 'hello' },
          },
        ],
      }),
    },
    { name: 'secret', description: 'Hidden by a filter', get: () => 'secret' },
  ]);
}

function textOf(contents: unknown): string | undefined {
  return (contents as { text?: string } | undefined)?.text;
}

async function connect(
  t: { after: (fn: () => Promise<void>) => void },
  options: McpBridgeOptions,
): Promise<Client> {
  const server = createMcpServer(new LiveToolSet([]), options);
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'content-test', version: '1' });
  await client.connect(clientSide);
  t.after(() => client.close());
  return client;
}

describe('resources from a ResourceSet', { timeout: 30_000 }, () => {
  test('capabilities, list, templates and reads', async (t) => {
    const client = await connect(t, { resources: makeResources() });
    const caps = client.getServerCapabilities();
    assert.deepEqual(caps?.resources, { subscribe: true, listChanged: true });
    assert.deepEqual(caps?.completions, {});
    assert.equal(caps?.prompts, undefined);
    const { resources } = await client.listResources();
    assert.deepEqual(resources[0], {
      uri: 'test://text',
      name: 'text',
      description: 'Some text',
      mimeType: 'text/plain',
      size: 5,
    });
    assert.deepEqual(
      resources.map((r) => r.uri),
      ['test://text', 'test://png', 'test://clock'],
    );
    const { resourceTemplates } = await client.listResourceTemplates();
    assert.deepEqual(resourceTemplates, [
      { uriTemplate: 'test://city/{name}/weather', name: 'weather', mimeType: 'application/json' },
    ]);
    assert.deepEqual((await client.readResource({ uri: 'test://text' })).contents, [
      { uri: 'test://text', mimeType: 'text/plain', text: 'hello' },
    ]);
    assert.deepEqual((await client.readResource({ uri: 'test://png' })).contents, [
      { uri: 'test://png', mimeType: 'image/png', blob: PNG },
    ]);
    assert.equal(textOf((await client.readResource({ uri: 'test://clock' })).contents[0]), 'tick');
    const city = await client.readResource({ uri: 'test://city/Quito%20Norte/weather' });
    assert.deepEqual(JSON.parse(textOf(city.contents[0]) ?? ''), { name: 'Quito Norte', celsius: 20 });
  });

  test('an unknown URI is Resource not found with the uri', async (t) => {
    const client = await connect(t, { resources: makeResources() });
    for (const uri of ['test://nothing', 'test://city/nowhere/weather']) {
      // The official client reads -32002 and -32602-with-a-uri alike (as code -32602): the wire code
      // is checked over raw HTTP below.
      await assert.rejects(client.readResource({ uri }), (error: unknown) => {
        const e = error as { message: string; data?: { uri?: string } };
        assert.match(e.message, /Resource not found/);
        assert.equal(e.data?.uri, uri);
        return true;
      });
    }
  });

  test('subscribe, updated, unsubscribe and list_changed', async (t) => {
    const resources = makeResources();
    const client = await connect(t, { resources });
    const updated: string[] = [];
    let listChanged = 0;
    client.setNotificationHandler('notifications/resources/updated', (n) => void updated.push(n.params.uri));
    client.setNotificationHandler('notifications/resources/list_changed', () => void listChanged++);
    assert.deepEqual(await client.subscribeResource({ uri: 'test://text' }), {});
    resources.set({ uri: 'test://text', name: 'text', mimeType: 'text/plain', text: 'changed' });
    resources.updated('test://clock'); // not subscribed: no notification
    assert.ok(await waitFor(() => updated.length === 1, 5000, 10), 'no resources/updated arrived');
    assert.deepEqual(updated, ['test://text']);
    assert.deepEqual(await client.unsubscribeResource({ uri: 'test://text' }), {});
    resources.set({ uri: 'test://text', name: 'text', mimeType: 'text/plain', text: 'again' });
    resources.set({ uri: 'test://new', name: 'new', text: 'new' });
    assert.ok(await waitFor(() => listChanged >= 1, 5000, 10), 'no resources/list_changed arrived');
    assert.deepEqual(updated, ['test://text']);
    assert.equal(textOf((await client.readResource({ uri: 'test://text' })).contents[0]), 'again');
  });

  test('template variables complete from their values: prefix, at most 100, total and hasMore', async (t) => {
    const client = await connect(t, { resources: makeResources() });
    const ref = { type: 'ref/resource' as const, uri: 'test://city/{name}/weather' };
    const all = await client.complete({ ref, argument: { name: 'name', value: 'city-' } });
    assert.equal(all.completion.values.length, 100);
    assert.equal(all.completion.total, 150);
    assert.equal(all.completion.hasMore, true);
    const some = await client.complete({ ref, argument: { name: 'name', value: 'CITY-14' } });
    assert.deepEqual(some.completion, {
      values: CITIES.filter((c) => c.startsWith('city-14')),
      total: 10,
      hasMore: false,
    });
    const unknown = await client.complete({
      ref: { type: 'ref/resource', uri: 'test://other/{x}' },
      argument: { name: 'x', value: '' },
    });
    assert.deepEqual(unknown.completion.values, []);
  });
});

describe('a resource filter with overlapping entries', { timeout: 30_000 }, () => {
  // Both templates match data://42; a read is served by the first, so the filter must decide by it.
  const overlapping = (): ResourceSet =>
    new ResourceSet({
      resources: [{ uri: 'data://fixed', name: 'public', text: 'fixed data' }],
      templates: [
        { uriTemplate: 'data://{id}', name: 'secret', read: () => 'the secret' },
        { uriTemplate: 'data://{key}', name: 'public', read: () => 'public data' },
      ],
    });
  const notFound = (error: unknown): boolean => {
    assert.match((error as Error).message, /Resource not found/);
    return true;
  };

  test('a URI a hidden template serves stays hidden though a shown template matches it too', async (t) => {
    const resources = overlapping();
    assert.equal(resources.resolve('data://42'), 'secret');
    assert.equal(resources.resolve('data://fixed'), 'public');
    const client = await connect(t, { resources, resourceFilter: (name) => name === 'public' });
    assert.deepEqual(
      (await client.listResourceTemplates()).resourceTemplates.map((r) => r.name),
      ['public'],
    );
    await assert.rejects(client.readResource({ uri: 'data://42' }), notFound);
    await assert.rejects(client.subscribeResource({ uri: 'data://42' }), notFound);
    // A fixed resource comes before any template: shown, it is read.
    assert.equal(textOf((await client.readResource({ uri: 'data://fixed' })).contents[0]), 'fixed data');
    const secret = await connect(t, { resources, resourceFilter: (name) => name === 'secret' });
    assert.equal(textOf((await secret.readResource({ uri: 'data://42' })).contents[0]), 'the secret');
    await assert.rejects(secret.readResource({ uri: 'data://fixed' }), notFound);
  });

  test('a provider without resolve: the same rule applied to its listing', async (t) => {
    const set = overlapping();
    const resources: ResourceProvider = {
      list: () => set.list(),
      templates: () => set.templates(),
      read: (uri, options) => set.read(uri, options),
    };
    const client = await connect(t, { resources, resourceFilter: (name) => name === 'public' });
    await assert.rejects(client.readResource({ uri: 'data://42' }), notFound);
    assert.equal(textOf((await client.readResource({ uri: 'data://fixed' })).contents[0]), 'fixed data');
  });
});

describe('prompts from a PromptSet', { timeout: 30_000 }, () => {
  test('list with arguments, get with arguments and media, errors', async (t) => {
    const client = await connect(t, { prompts: makePrompts() });
    assert.deepEqual(client.getServerCapabilities()?.prompts, { listChanged: true });
    const { prompts } = await client.listPrompts();
    assert.deepEqual(
      prompts.find((p) => p.name === 'review'),
      {
        name: 'review',
        title: 'Code review',
        description: 'Review code in a language',
        arguments: [
          { name: 'language', description: 'The language', required: true },
          { name: 'style', description: 'How strict' },
        ],
      },
    );
    const hello = await client.getPrompt({ name: 'hello' });
    assert.deepEqual(hello.messages, [{ role: 'user', content: { type: 'text', text: 'Hello there.' } }]);
    const review = await client.getPrompt({ name: 'review', arguments: { language: 'go' } });
    assert.equal(review.description, 'A review request');
    assert.deepEqual(review.messages, [
      { role: 'user', content: { type: 'text', text: 'Review this go code (normal).' } },
      { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
      {
        role: 'assistant',
        content: {
          type: 'resource',
          resource: { uri: 'test://text', mimeType: 'text/plain', text: 'hello' },
        },
      },
    ]);
    await assert.rejects(client.getPrompt({ name: 'review', arguments: {} }), (error: unknown) => {
      const e = error as { code: number; message: string };
      assert.equal(e.code, -32602);
      assert.match(e.message, /prompt 'review': argument 'language' is required/);
      return true;
    });
    await assert.rejects(client.getPrompt({ name: 'nope' }), (error: unknown) => {
      const e = error as { code: number; message: string };
      assert.equal(e.code, -32602);
      assert.match(e.message, /unknown prompt 'nope'; available prompts: 'hello', 'review', 'secret'/);
      return true;
    });
  });

  test('argument completion, a filter that hides a prompt, and list_changed', async (t) => {
    const prompts = makePrompts();
    const client = await connect(t, { prompts, promptFilter: (name) => name !== 'secret' });
    const completion = await client.complete({
      ref: { type: 'ref/prompt', name: 'review' },
      argument: { name: 'language', value: 'p' },
    });
    assert.deepEqual(completion.completion, { values: ['python', 'Pascal'], total: 2, hasMore: false });
    const none = await client.complete({
      ref: { type: 'ref/prompt', name: 'review' },
      argument: { name: 'style', value: '' },
    });
    assert.deepEqual(none.completion.values, []);
    assert.deepEqual(
      (await client.listPrompts()).prompts.map((p) => p.name),
      ['hello', 'review'],
    );
    await assert.rejects(client.getPrompt({ name: 'secret' }), /unknown prompt 'secret'/);
    const hidden = await client.complete({
      ref: { type: 'ref/prompt', name: 'secret' },
      argument: { name: 'x', value: '' },
    });
    assert.deepEqual(hidden.completion.values, []);
    let changed = 0;
    client.setNotificationHandler('notifications/prompts/list_changed', () => void changed++);
    prompts.set({ name: 'added', get: () => 'new' });
    assert.ok(await waitFor(() => changed === 1, 5000, 10), 'no prompts/list_changed arrived');
  });
});

describe('cancellation and provider failures', { timeout: 30_000 }, () => {
  /** A promise settled when `signal` aborts, noting that it did. */
  const untilAborted = (signal: AbortSignal, aborted: AbortSignal[]): Promise<never> =>
    new Promise((_, reject) =>
      signal.addEventListener('abort', () => {
        aborted.push(signal);
        reject(new Error('aborted'));
      }),
    );

  test("a client's cancel aborts the signal of a resource read and of a prompts/get", async (t) => {
    const aborted: AbortSignal[] = [];
    const started: string[] = [];
    const resources = new ResourceSet({
      templates: [
        {
          uriTemplate: 'slow://{id}',
          name: 'slow',
          read: (_uri, _vars, { signal }) => (started.push('read'), untilAborted(signal, aborted)),
        },
      ],
    });
    const prompts = new PromptSet([
      { name: 'slow', get: (_args, { signal }) => (started.push('get'), untilAborted(signal, aborted)) },
    ]);
    const client = await connect(t, { resources, prompts });
    const reading = new AbortController();
    const read = client.readResource({ uri: 'slow://1' }, { signal: reading.signal });
    assert.ok(await waitFor(() => started.includes('read'), 5000, 10));
    reading.abort(new Error('the user gave up'));
    await assert.rejects(read, /the user gave up/);
    assert.ok(await waitFor(() => aborted.length === 1, 5000, 10), 'the read went on');
    const getting = new AbortController();
    const got = client.getPrompt({ name: 'slow' }, { signal: getting.signal });
    assert.ok(await waitFor(() => started.includes('get'), 5000, 10));
    getting.abort(new Error('the user gave up'));
    await assert.rejects(got, /the user gave up/);
    assert.ok(await waitFor(() => aborted.length === 2, 5000, 10), 'the prompts/get went on');
  });

  test("a provider's own error is a generic -32603 '… failed', its internals kept back", async (t) => {
    const internal = new Error('ECONNREFUSED 10.0.0.7:5432 (password=hunter2)');
    const resources = new ResourceSet({
      resources: [{ uri: 'db://row', name: 'row', read: () => Promise.reject(internal) }],
    });
    const prompts = new PromptSet([{ name: 'db', get: () => Promise.reject(internal) }]);
    const client = await connect(t, { resources, prompts });
    const generic = (what: RegExp) => (error: unknown) => {
      const e = error as { code: number; message: string };
      assert.equal(e.code, -32603);
      assert.match(e.message, what);
      assert.doesNotMatch(e.message, /ECONNREFUSED|hunter2/);
      return true;
    };
    await assert.rejects(
      client.readResource({ uri: 'db://row' }),
      generic(/reading resource 'db:\/\/row' failed/),
    );
    await assert.rejects(client.getPrompt({ name: 'db' }), generic(/getting prompt 'db' failed/));
  });
});

describe('over Streamable HTTP', { timeout: 30_000 }, () => {
  test('a session reads, gets and hears resources/updated on its GET stream', async (t) => {
    const resources = makeResources();
    const handler = createMcpHttpHandler(new LiveToolSet([]), { resources, prompts: makePrompts() });
    const url = await listenMcp(t, handler);
    const client = new Client({ name: 'http', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    t.after(() => client.close());
    assert.equal(textOf((await client.readResource({ uri: 'test://text' })).contents[0]), 'hello');
    assert.equal((await client.getPrompt({ name: 'hello' })).messages.length, 1);
    // On the wire, a 2025-era session gets -32002 with the uri.
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
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      }),
    });
    const session = init.headers.get('mcp-session-id')!;
    await init.text();
    const read = await fetch(url, {
      method: 'POST',
      headers: { ...headers, 'mcp-session-id': session },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'resources/read',
        params: { uri: 'test://missing' },
      }),
    });
    const answer = JSON.parse(/^data: (.+)$/m.exec(await read.text())![1]!) as {
      error: { code: number; message: string; data: { uri: string } };
    };
    assert.deepEqual(answer.error, {
      code: -32002,
      message: 'Resource not found: test://missing',
      data: { uri: 'test://missing' },
    });
    const updated: string[] = [];
    client.setNotificationHandler('notifications/resources/updated', (n) => void updated.push(n.params.uri));
    await client.subscribeResource({ uri: 'test://clock' });
    // The notification goes to the session's GET stream, which the client opens after connecting.
    for (let i = 0; i < 50 && updated.length === 0; i++) {
      resources.updated('test://clock');
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(updated.includes('test://clock'), 'no resources/updated arrived');
  });
});
