/**
 * Ten thousand tools on a real `toolbus up` (memory bus, SQLite), with a fake OpenAI server as the
 * model: the agent sees `search_tools`, finds `tell-joke` among 10,000 tools and calls it; search,
 * profiles and principals bound to a profile through the REST API and the CLI; `/mcp/<profile>` and
 * `/mcp?search=1` read by the official MCP client.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport, type Tool } from '@modelcontextprotocol/client';
import { chatCompletion, startFakeOpenAIServer } from '../fixtures/fake-openai-server.js';
import { interrupt, runCli, startCli } from '../support/cli.js';
import { SqliteConfigStore } from '../../src/config/sqlite/index.js';

const ADMIN = 'catalog-admin-token-0123456789abc';
const FILLER = 9_999;

/** 9,999 inventory tools on the example joke service, and a profile of the joke tools. */
async function fillStore(home: string): Promise<void> {
  const store = new SqliteConfigStore({ path: join(home, 'config.db'), synchronous: 'normal' });
  try {
    for (let i = 0; i < FILLER; i++) {
      await store.put('tool', `inventory-item-${i}`, {
        type: 'tool-service',
        name: `inventory-item-${i}`,
        description: `Look up the stock of warehouse item number ${i}`,
        service: 'joke-service',
        arguments: [{ name: 'sku', type: 'string', description: 'The stock keeping unit' }],
        tags: ['inventory'],
      });
    }
    await store.put('profile', 'jokes', { tools: ['tell-*'], description: 'Only jokes' });
    await store.put('profile', 'stock', { tags: ['inventory'], exclude: ['inventory-item-1*'] });
  } finally {
    await store.close();
  }
}

function env(home: string, modelUrl: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TOOLBUS_HOME: home,
    TOOLBUS_TOKEN: ADMIN,
    OPENAI_BASE_URL: modelUrl,
    OPENAI_API_KEY: 'sk-test',
    TOOLBUS_MODEL: 'fake',
  };
}

function get(url: string, token: string, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers },
  });
}

type WireTool = { function: { name: string } };
type Message = { role: string; content?: string; name?: string; tool_calls?: unknown[] };

async function setUp(t: TestContext) {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-catalog-'));
  t.after(() => rm(home, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }));
  await fillStore(home);
  const model = await startFakeOpenAIServer();
  t.after(() => model.close());
  const up = await startCli(['up', '--port', '0'], env(home, model.baseURL), /Press Ctrl-C to stop\./);
  t.after(() => interrupt(up.child));
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())?.[1];
  assert.ok(url, up.output());
  return { home, model, url };
}

test(
  'toolbus up with 10,000 tools: the agent finds tell-joke through search_tools and calls it; search, profiles and bound principals over REST, the CLI and /mcp',
  { timeout: 180_000 },
  async (t) => {
    const { home, model, url } = await setUp(t);
    const health = (await (await get(url, ADMIN, '/api/v1/health')).json()) as {
      tools: number;
      problems: unknown[];
    };
    assert.equal(health.tools, FILLER + 2, JSON.stringify(health.problems).slice(0, 500));

    // The agent: step 1 offers search_tools only; the model searches; step 2 offers what it found.
    const offered: string[][] = [];
    model.replyAlways((request) => {
      const tools = (request.body?.['tools'] ?? []) as WireTool[];
      offered.push(tools.map((w) => w.function.name));
      const messages = (request.body?.['messages'] ?? []) as Message[];
      const last = messages[messages.length - 1]!;
      if (last.role === 'user') {
        return {
          json: chatCompletion({
            toolCalls: [{ id: 's1', name: 'search_tools', arguments: '{"query":"joke"}' }],
          }),
        };
      }
      if (messages.filter((m) => m.role === 'tool').length === 1) {
        const found = JSON.parse(last.content!) as { tools: { name: string }[] };
        const name = found.tools[0]!.name;
        return { json: chatCompletion({ toolCalls: [{ id: 'c1', name, arguments: '{"topic":"cats"}' }] }) };
      }
      return { json: chatCompletion({ content: `Here it is: ${last.content}` }) };
    });
    const asked = await get(url, ADMIN, '/api/v1/agent', {
      method: 'POST',
      body: JSON.stringify({ question: 'Tell me a joke about cats' }),
    });
    assert.equal(asked.status, 200);
    const { answer } = (await asked.json()) as { answer: string };
    assert.match(answer, /^Here it is: .*pun/s);
    assert.deepEqual(offered[0], ['search_tools']);
    assert.ok(offered[1]!.includes('tell-joke'), offered[1]!.join(','));
    assert.ok(offered[1]!.length <= 9, `${offered[1]!.length} tools offered after the search`);

    // A profile: the model sees only its tools (few enough to show whole).
    offered.length = 0;
    const cli = await runCli(
      ['ask', 'Tell me a joke about cats', '--profile', 'jokes', '--url', url],
      env(home, model.baseURL),
    );
    assert.equal(cli.code, 0, cli.stderr);
    assert.deepEqual(offered[0]!.sort(), ['tell-dad-joke', 'tell-joke']);
    const unknown = await runCli(['ask', 'x', '--profile', 'jokez', '--url', url], env(home, model.baseURL));
    assert.notEqual(unknown.code, 0);
    assert.match(
      unknown.stderr,
      /unknown profile 'jokez' \(did you mean 'jokes'\?\); profiles: jokes, stock/,
    );

    // Search over REST and the CLI.
    const found = (await (await get(url, ADMIN, '/api/v1/tools?search=joke&limit=3')).json()) as {
      tools: { name: string; score: number }[];
    };
    assert.equal(found.tools[0]!.name, 'tell-joke');
    assert.ok(found.tools.length <= 3);
    const bad = await get(url, ADMIN, '/api/v1/tools?search=joke&limit=0');
    assert.equal(bad.status, 400);
    const empty = await get(url, ADMIN, '/api/v1/tools?search=%20');
    assert.equal(empty.status, 400);
    assert.match(await empty.text(), /\?search= needs words/);
    const badProfile = await get(url, ADMIN, '/api/v1/agent', {
      method: 'POST',
      body: JSON.stringify({ question: 'x', profile: 5 }),
    });
    assert.equal(badProfile.status, 400);
    assert.match(
      ((await badProfile.json()) as { error: { message: string } }).error.message,
      /"profile" must be a profile id/,
    );
    assert.equal((await get(url, ADMIN, '/api/v1/tools?profile=nope')).status, 404);
    const listed = await runCli(
      ['tools', '--search', 'warehouse item 42', '--limit', '2', '--json', '--url', url],
      env(home, model.baseURL),
    );
    assert.equal(listed.code, 0, listed.stderr);
    const names = (JSON.parse(listed.stdout) as { name: string; tags?: string[] }[]).map((x) => x.name);
    assert.equal(names.length, 2);
    assert.equal(names[0], 'inventory-item-42');
    const profiled = (await (await get(url, ADMIN, '/api/v1/tools?profile=stock')).json()) as {
      tools: { name: string }[];
    };
    assert.equal(profiled.tools.length, FILLER - 1111);
    assert.ok(
      profiled.tools.every(
        (x) => x.name.startsWith('inventory-item-') && !x.name.startsWith('inventory-item-1'),
      ),
    );

    // A misspelt tool: the answer names the nearest few, not 10,000 names.
    const typo = await get(url, ADMIN, '/api/v1/tools/tell-jok/invoke', { method: 'POST', body: '{}' });
    assert.equal(typo.status, 404);
    const typoText = await typo.text();
    assert.match(typoText, /did you mean 'tell-joke'/);
    assert.ok(typoText.length < 2048, `${typoText.length} characters`);

    // A principal bound to a profile sees and calls only its tools, and may not pick another.
    const add = await runCli(
      ['principal', 'add', 'joker', '--role', 'caller', '--profile', 'jokes'],
      env(home, model.baseURL),
    );
    assert.equal(add.code, 0, add.stderr);
    const token = /tbk_[A-Za-z0-9_-]{43}/.exec(add.stdout)![0];
    let mine: { tools: { name: string }[] } = { tools: [] };
    for (let i = 0; i < 100 && mine.tools.length !== 2; i++) {
      const r = await get(url, token, '/api/v1/tools');
      if (r.status === 200) mine = (await r.json()) as typeof mine;
      else await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.deepEqual(mine.tools.map((x) => x.name).sort(), ['tell-dad-joke', 'tell-joke']);
    assert.equal((await get(url, token, '/api/v1/tools?profile=stock')).status, 403);
    const outside = await get(url, token, '/api/v1/tools/inventory-item-1/invoke', {
      method: 'POST',
      body: '{"sku":"a"}',
    });
    assert.equal(outside.status, 404);
    assert.match(await outside.text(), /available tools: 'tell-(dad-)?joke', 'tell-(dad-)?joke'"/);
    const inside = await get(url, token, '/api/v1/tools/tell-joke/invoke', {
      method: 'POST',
      body: '{"topic":"dogs"}',
    });
    assert.equal(inside.status, 200);

    // MCP: /mcp/jokes lists the profile; /mcp/stock is refused to the bound principal; /mcp?search=1
    // lists search_tools, and a search adds what it found to the session's list.
    const connect = async (
      path: string,
      bearer: string,
      onChanged?: (tools: Tool[]) => void,
    ): Promise<Client> => {
      const client = new Client(
        { name: 'test', version: '1' },
        {
          versionNegotiation: { mode: 'legacy' },
          ...(onChanged
            ? {
                listChanged: {
                  tools: { debounceMs: 0, onChanged: (_e, tools) => tools && onChanged(tools) },
                },
              }
            : {}),
        },
      );
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${url}${path}`), {
          requestInit: { headers: { authorization: `Bearer ${bearer}` } },
        }),
      );
      t.after(() => client.close());
      return client;
    };
    const jokes = await connect('/mcp/jokes', ADMIN);
    assert.deepEqual((await jokes.listTools()).tools.map((x) => x.name).sort(), [
      'tell-dad-joke',
      'tell-joke',
    ]);
    await assert.rejects(connect('/mcp/stock', token), /403|bound to profile 'jokes'/);
    const missing = await get(url, ADMIN, '/mcp/nope', {
      method: 'POST',
      headers: { accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(missing.status, 404);
    assert.match(await missing.text(), /unknown profile 'nope'/);
    const changes: Tool[][] = [];
    const searching = await connect('/mcp?search=1', ADMIN, (tools) => changes.push(tools));
    assert.deepEqual(
      (await searching.listTools()).tools.map((x) => x.name),
      ['search_tools'],
    );
    const result = await searching.callTool({ name: 'search_tools', arguments: { query: 'joke' } });
    const text = (result.content as { type: string; text: string }[])[0]!.text;
    const hits = JSON.parse(text) as { tools: { name: string; parameters?: unknown }[] };
    assert.equal(hits.tools[0]!.name, 'tell-joke');
    assert.ok(hits.tools[0]!.parameters, 'the search result carries the schema for MCP clients');
    for (let i = 0; i < 100 && changes.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(
      changes.at(-1)?.some((x) => x.name === 'tell-joke'),
      'list_changed brought tell-joke in',
    );
    const joke = await searching.callTool({ name: 'tell-joke', arguments: { topic: 'owls' } });
    assert.match((joke.content as { text: string }[])[0]!.text, /Here's a pun for you/);
  },
);
