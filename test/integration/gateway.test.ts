import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { FunctionTool, LiveToolSet, MemoryConfigStore, ToolbusError } from '../../src/index.js';
import { createGateway, isLoopbackHost, type GatewayAgent } from '../../src/gateway/index.js';

const echo = new FunctionTool(async ({ text }: { text: string }) => `echo: ${text}`, {
  name: 'echo',
  description: 'Echo the text',
  parameters: z.object({ text: z.string().describe('What to echo') }),
});
const boom = new FunctionTool(
  async () => {
    throw new Error('the tool broke');
  },
  { name: 'boom', description: 'Always fails', parameters: z.object({}) },
);
const whoami = new FunctionTool(async (_args: Record<string, never>, ctx) => `user=${ctx.user ?? '-'}`, {
  name: 'whoami',
  description: 'Returns the caller',
  parameters: z.object({}),
});

const scriptedAgent: GatewayAgent = {
  async ask(question, { user, onEvent }) {
    onEvent?.({ type: 'thought', content: `I should echo for ${user}` });
    onEvent?.({ type: 'observation', content: `echo: ${question}` });
    return `answer to ${question}`;
  },
};

async function start(
  t: { after: (fn: () => Promise<void>) => void },
  extra: Partial<Parameters<typeof createGateway>[0]> = {},
) {
  const store = new MemoryConfigStore();
  const gateway = createGateway({
    tools: new LiveToolSet([echo, boom, whoami]),
    store,
    maxBodyBytes: 1024,
    noAuth: true,
    ...extra,
  });
  const url = await gateway.listen({ port: 0 });
  t.after(async () => {
    await gateway.close();
    await store.close();
  });
  return { url, store };
}

const JSON_HEADERS = { 'content-type': 'application/json' };

async function json(response: Response): Promise<Record<string, unknown>> {
  return (await response.json()) as Record<string, unknown>;
}

describe('HTTP gateway', () => {
  test('GET /api/v1/tools?fresh=1 waits for the refresh (a registry catching up with the store) before listing', async (t) => {
    const tools = new LiveToolSet([echo]);
    let refreshes = 0;
    const { url } = await start(t, {
      tools,
      refresh: async () => {
        refreshes++;
        await new Promise((resolve) => setTimeout(resolve, 50));
        tools.replace([echo, boom]); // what the rebuild brings in
      },
    });
    const names = async (path: string): Promise<string[]> =>
      ((await json(await fetch(`${url}${path}`))) as { tools: { name: string }[] }).tools.map((x) => x.name);
    assert.deepEqual(await names('/api/v1/tools'), ['echo'], 'without fresh: what is live, no refresh');
    assert.equal(refreshes, 0);
    assert.deepEqual(await names('/api/v1/tools?fresh=1'), ['echo', 'boom']);
    assert.equal(refreshes, 1);
  });

  test('a failing refresh still answers with the live tools', async (t) => {
    const { url } = await start(t, { refresh: () => Promise.reject(new Error('store down')) });
    const res = await fetch(`${url}/api/v1/tools?fresh=1`);
    assert.equal(res.status, 200);
    assert.equal(((await json(res)) as { tools: unknown[] }).tools.length, 3);
  });

  test('health, tool list and invoke return JSON', async (t) => {
    const { url } = await start(t);
    const health = await json(await fetch(`${url}/api/v1/health`));
    assert.equal(health.status, 'ok');
    assert.equal(health.tools, 3);

    const list = (await json(await fetch(`${url}/api/v1/tools`))) as {
      tools: { name: string; parameters: unknown }[];
    };
    assert.deepEqual(
      list.tools.map((x) => x.name),
      ['echo', 'boom', 'whoami'],
    );
    const res = await fetch(`${url}/api/v1/tools/echo/invoke`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: '{"text":"hi"}',
    });
    assert.equal(res.status, 200);
    assert.deepEqual(
      { ...(await json(res)), callId: 'x' },
      { name: 'echo', callId: 'x', content: 'echo: hi', isError: false },
    );
  });

  test('invoke answers content parts as parts and an output-schema result as structured, beside the text', async (t) => {
    const chart = new FunctionTool(() => [{ type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }], {
      name: 'chart',
      description: 'Draws',
      parameters: z.object({}),
    });
    const sum = new FunctionTool(() => ({ total: 3 }), {
      name: 'sum',
      description: 'Adds',
      parameters: z.object({}),
      outputSchema: z.object({ total: z.number() }),
    });
    const { url } = await start(t, { tools: new LiveToolSet([chart, sum]) });
    const invoke = async (name: string) =>
      json(
        await fetch(`${url}/api/v1/tools/${name}/invoke`, {
          method: 'POST',
          headers: JSON_HEADERS,
          body: '{}',
        }),
      );
    const drawn = await invoke('chart');
    assert.equal(drawn.content, '[image: image/png, 8 bytes]');
    assert.deepEqual(drawn.parts, [{ type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }]);
    const added = await invoke('sum');
    assert.deepEqual(
      [added.content, added.structured, added.parts],
      ['{"total":3}', { total: 3 }, undefined],
    );
  });

  test('tool errors come back as results with the error text and code', async (t) => {
    const { url } = await start(t);
    const bad = await json(
      await fetch(`${url}/api/v1/tools/echo/invoke`, {
        method: 'POST',
        headers: JSON_HEADERS,
        body: '{"text":5}',
      }),
    );
    assert.equal(bad.isError, true);
    assert.equal(bad.code, 'invalid-arguments');
    assert.match(String(bad.content), /text/);
    const thrown = await json(
      await fetch(`${url}/api/v1/tools/boom/invoke`, { method: 'POST', headers: JSON_HEADERS, body: '{}' }),
    );
    assert.equal(thrown.isError, true);
    assert.match(String(thrown.content), /the tool broke/);
  });

  test('the user comes from the request, not from the arguments', async (t) => {
    const { url } = await start(t);
    const r = await json(
      await fetch(`${url}/api/v1/tools/whoami/invoke?user=alice`, {
        method: 'POST',
        headers: JSON_HEADERS,
        body: '{}',
      }),
    );
    assert.equal(r.content, 'user=alice');
  });

  test('bad requests get 4xx JSON that says what to fix', async (t) => {
    const { url } = await start(t);
    const unknown = await fetch(`${url}/api/v1/tools/nope/invoke`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: '{}',
    });
    assert.equal(unknown.status, 404);
    const u = (await json(unknown)) as { error: { code: string; message: string } };
    assert.equal(u.error.code, 'unknown-tool');
    assert.match(u.error.message, /available tools: 'echo', 'boom', 'whoami'/);

    const malformed = await fetch(`${url}/api/v1/tools/echo/invoke`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: '{"text":',
    });
    assert.equal(malformed.status, 400);
    assert.match(((await json(malformed)) as { error: { message: string } }).error.message, /not valid JSON/);

    const notObject = await fetch(`${url}/api/v1/tools/echo/invoke`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: '[1,2]',
    });
    assert.equal(notObject.status, 400);
    assert.match(((await json(notObject)) as { error: { message: string } }).error.message, /JSON object/);

    const big = await fetch(`${url}/api/v1/tools/echo/invoke`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: JSON.stringify({ text: 'x'.repeat(5000) }),
    });
    assert.equal(big.status, 413);
    assert.match(((await json(big)) as { error: { message: string } }).error.message, /limit is 1024 bytes/);

    const method = await fetch(`${url}/api/v1/tools`, { method: 'DELETE' });
    assert.equal(method.status, 405);
    const route = await fetch(`${url}/api/v2/nothing`);
    assert.equal(route.status, 404);
    for (const path of ['/api/v1/tools/%E0%A4%A/invoke', '/api/v1/config/tool/%E0%A4%A']) {
      const badEscape = await fetch(`${url}${path}`, {
        method: path.endsWith('invoke') ? 'POST' : 'GET',
        headers: JSON_HEADERS,
      });
      assert.equal(badEscape.status, 400, path);
      assert.match(((await json(badEscape)) as { error: { message: string } }).error.message, /%-escape/);
    }
    const noQuestion = await fetch(`${url}/api/v1/agent`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: '{}',
    });
    assert.equal(noQuestion.status, 400);
    assert.match(((await json(noQuestion)) as { error: { message: string } }).error.message, /"question"/);
  });

  test('without an agent, /agent answers 503 with how to configure a model', async (t) => {
    const { url } = await start(t, { agentUnavailableMessage: 'set OPENAI_API_KEY' });
    const res = await fetch(`${url}/api/v1/agent`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: '{"question":"hi"}',
    });
    assert.equal(res.status, 503);
    const body = (await json(res)) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'no-model');
    assert.match(body.error.message, /OPENAI_API_KEY/);
  });

  test('the agent answers as JSON, or as server-sent events in order', async (t) => {
    const { url } = await start(t, { agent: scriptedAgent });
    const plain = await json(
      await fetch(`${url}/api/v1/agent`, {
        method: 'POST',
        headers: JSON_HEADERS,
        body: '{"question":"q1"}',
      }),
    );
    assert.deepEqual(plain, { answer: 'answer to q1' });

    const res = await fetch(`${url}/api/v1/agent`, {
      method: 'POST',
      headers: { ...JSON_HEADERS, accept: 'text/event-stream' },
      body: '{"question":"q2","user":"bob"}',
    });
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    const text = await res.text();
    const events = text
      .trim()
      .split('\n\n')
      .map((block) => {
        const [eventLine, dataLine] = block.split('\n');
        return {
          event: eventLine!.slice('event: '.length),
          data: JSON.parse(dataLine!.slice('data: '.length)) as unknown,
        };
      });
    assert.deepEqual(events, [
      { event: 'thought', data: { type: 'thought', content: 'I should echo for bob' } },
      { event: 'observation', data: { type: 'observation', content: 'echo: q2' } },
      { event: 'answer', data: { type: 'answer', content: 'answer to q2' } },
    ]);
  });

  test('config routes put, get, list and delete items, with JSON errors', async (t) => {
    const { url } = await start(t);
    const put = await fetch(`${url}/api/v1/config/tool/echo2`, {
      method: 'PUT',
      headers: JSON_HEADERS,
      body: '{"type":"function","name":"echo"}',
    });
    assert.equal(put.status, 200);
    const got = await json(await fetch(`${url}/api/v1/config/tool/echo2`));
    assert.deepEqual(got.value, { type: 'function', name: 'echo' });
    const list = (await json(await fetch(`${url}/api/v1/config/tool`))) as { items: { key: string }[] };
    assert.deepEqual(
      list.items.map((i) => i.key),
      ['echo2'],
    );
    const badJson = await fetch(`${url}/api/v1/config/tool/x`, {
      method: 'PUT',
      headers: JSON_HEADERS,
      body: '{"a":',
    });
    assert.equal(badJson.status, 400);
    const badJsonError = ((await json(badJson)) as { error: { code: string; message: string } }).error;
    assert.equal(badJsonError.code, 'invalid-request');
    assert.match(badJsonError.message, /not valid JSON at line 1, column 6/);
    const conflict = await fetch(`${url}/api/v1/config/tool/echo2?ifRevision=0`, {
      method: 'PUT',
      headers: JSON_HEADERS,
      body: '{}',
    });
    assert.equal(conflict.status, 409);
    const del = await fetch(`${url}/api/v1/config/tool/echo2`, { method: 'DELETE' });
    assert.equal(del.status, 200);
    const missing = await fetch(`${url}/api/v1/config/tool/echo2`);
    assert.equal(missing.status, 404);
  });

  test('a token is required on every route but health', async (t) => {
    const { url } = await start(t, { token: 's3cret' });
    assert.equal((await fetch(`${url}/api/v1/health`)).status, 200);
    const denied = await fetch(`${url}/api/v1/tools`);
    assert.equal(denied.status, 401);
    assert.match(
      ((await json(denied)) as { error: { message: string } }).error.message,
      /Authorization: Bearer/,
    );
    assert.equal(
      (await fetch(`${url}/api/v1/tools`, { headers: { authorization: 'Bearer wrong' } })).status,
      401,
    );
    assert.equal(
      (await fetch(`${url}/api/v1/tools`, { headers: { authorization: 'Bearer s3cret' } })).status,
      200,
    );
    // The scheme is case-insensitive (RFC 7235); the token is not.
    for (const [header, status] of [
      ['bearer s3cret', 200],
      ['BEARER s3cret', 200],
      ['bearer S3CRET', 401],
      ['Basic s3cret', 401],
    ] as const) {
      const res = await fetch(`${url}/api/v1/tools`, { headers: { authorization: header } });
      assert.equal(res.status, status, header);
    }
  });

  test('a gateway needs a token, or noAuth on loopback only: beyond loopback it is refused with the reason', async () => {
    assert.throws(
      () => createGateway({ tools: new LiveToolSet([echo]) }),
      (error: unknown) =>
        error instanceof ToolbusError && error.code === 'usage' && /noAuth/.test(error.message),
    );
    const gateway = createGateway({ tools: new LiveToolSet([echo]), noAuth: true });
    await assert.rejects(gateway.listen({ host: '0.0.0.0', port: 0 }), (error: unknown) => {
      assert.ok(error instanceof ToolbusError);
      assert.equal(error.code, 'usage');
      assert.match(error.message, /TOOLBUS_TOKEN/);
      return true;
    });
    await gateway.close();
    assert.equal(isLoopbackHost('127.0.0.1'), true);
    assert.equal(isLoopbackHost('::1'), true);
    assert.equal(isLoopbackHost('localhost'), true);
    assert.equal(isLoopbackHost('10.0.0.1'), false);
  });

  test('on close, a call in flight finishes within the grace period, or is cancelled with a typed error after it', async () => {
    let release: (() => void) | undefined;
    const slow = new FunctionTool(
      (_args: Record<string, never>, { signal }) =>
        new Promise<string>((resolve, reject) => {
          release = () => resolve('finished');
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        }),
      { name: 'slow', description: 'Waits until released', parameters: z.object({}) },
    );
    // Grace long enough: the call finishes and its client gets the result.
    const patient = createGateway({ tools: new LiveToolSet([slow]), noAuth: true });
    const url1 = await patient.listen({ port: 0 });
    const pending1 = fetch(`${url1}/api/v1/tools/slow/invoke`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: '{}',
    });
    while (!release) await new Promise((r) => setTimeout(r, 5));
    const closing = patient.close({ graceMs: 10_000 });
    release();
    const done = (await (await pending1).json()) as { content: string; isError: boolean };
    assert.deepEqual([done.content, done.isError], ['finished', false]);
    await closing;

    // Grace too short: the call is cancelled and the client is told so.
    release = undefined;
    const hasty = createGateway({ tools: new LiveToolSet([slow]), noAuth: true });
    const url2 = await hasty.listen({ port: 0 });
    const pending2 = fetch(`${url2}/api/v1/tools/slow/invoke`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: '{}',
    });
    while (!release) await new Promise((r) => setTimeout(r, 5));
    const hastyClosing = hasty.close({ graceMs: 20 });
    const outcome = (await (await pending2).json()) as { content: string; isError: boolean; code?: string };
    assert.deepEqual([outcome.isError, outcome.code], [true, 'cancelled']);
    assert.match(outcome.content, /shutting down/);
    await hastyClosing;
  });

  test('a client that disconnects cancels its tool call; a slow tool hits the gateway timeout as a typed result', async (t) => {
    let aborted: unknown;
    let started: (() => void) | undefined;
    const begun = new Promise<void>((r) => (started = r));
    const hang = new FunctionTool(
      (_args: Record<string, never>, { signal }) =>
        new Promise<string>((_resolve, reject) => {
          started?.();
          signal.addEventListener(
            'abort',
            () => {
              aborted = signal.reason;
              reject(signal.reason);
            },
            { once: true },
          );
        }),
      { name: 'hang', description: 'Never finishes', parameters: z.object({}) },
    );
    const gateway = createGateway({ tools: new LiveToolSet([hang]), toolTimeoutMs: 100, noAuth: true });
    const url = await gateway.listen({ port: 0 });
    t.after(() => gateway.close({ graceMs: 10 }));

    const client = new AbortController();
    const pending = fetch(`${url}/api/v1/tools/hang/invoke`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: '{}',
      signal: client.signal,
    });
    await begun;
    client.abort();
    await assert.rejects(pending);
    for (let i = 0; i < 200 && aborted === undefined; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal((aborted as { code?: string } | undefined)?.code, 'cancelled');

    const timedOut = (await (
      await fetch(`${url}/api/v1/tools/hang/invoke`, { method: 'POST', headers: JSON_HEADERS, body: '{}' })
    ).json()) as {
      isError: boolean;
      code: string;
      content: string;
    };
    assert.deepEqual([timedOut.isError, timedOut.code], [true, 'timeout']);
    assert.match(timedOut.content, /100 ms/);
  });

  test('health answers HEAD, and other methods get 405 naming GET, not a 404 "no route"', async (t) => {
    const { url } = await start(t);
    const head = await fetch(`${url}/api/v1/health`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    const post = await fetch(`${url}/api/v1/health`, { method: 'POST' });
    assert.equal(post.status, 405);
    const body = (await json(post)) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'method-not-allowed');
    assert.match(body.error.message, /POST is not allowed on \/api\/v1\/health; use GET/);
  });

  test("an unknown tool is a 404 with the tool set's one unknown-tool message, including why it is missing", async (t) => {
    const tools = new LiveToolSet([echo, boom, whoami], {
      describeUnknown: (name) =>
        name === 'bad'
          ? "its config item tool/bad was skipped: references unknown tool service 'nope'"
          : undefined,
    });
    const { url } = await start(t, { tools });
    const res = await fetch(`${url}/api/v1/tools/bad/invoke`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: '{}',
    });
    assert.equal(res.status, 404);
    const body = (await json(res)) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'unknown-tool');
    assert.match(
      body.error.message,
      /unknown tool 'bad' \(its config item tool\/bad was skipped: references unknown tool service 'nope'\); available tools: 'echo'/,
    );
  });

  test('a quiet agent run keeps its event stream alive with comments, so idle timeouts do not cut it', async (t) => {
    let finish: (answer: string) => void = () => {};
    const slowAgent: GatewayAgent = {
      ask: () => new Promise<string>((resolve) => (finish = resolve)),
    };
    const { url } = await start(t, { agent: slowAgent, heartbeatMs: 20 });
    // Bound: without heartbeats the first bytes would be the answer, sent here after a while.
    const guard = setTimeout(() => finish('no heartbeat came'), 5_000);
    t.after(() => clearTimeout(guard));
    const res = await fetch(`${url}/api/v1/agent`, {
      method: 'POST',
      headers: { ...JSON_HEADERS, accept: 'text/event-stream' },
      body: '{"question":"take your time"}',
    });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    for (let i = 0; i < 1000 && !text.includes(': keep-alive\n\n'); i++) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    assert.match(text, /^: keep-alive\n\n/);
    finish('done at last');
    for (let i = 0; i < 1000 && !text.includes('event: answer'); i++) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    assert.match(text, /event: answer\ndata: \{"type":"answer","content":"done at last"\}/);
  });
});
