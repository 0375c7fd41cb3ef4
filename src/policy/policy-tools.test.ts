import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { FunctionTool, ToolError, ToolSet, type ToolResult, type ToolResultEvent } from '../tools/index.js';
import { AccessPolicy, type AccessDeniedEvent } from './access-policy.js';
import { policyTools, toolsMatching, type ObservableToolProvider } from './policy-tools.js';
import type { Principal } from './principal.js';
import { parseRate } from './rate-limit.js';
import { MemoryConfigStore } from '../config/index.js';

/** Reports the user and call id it was called with, so a test sees what the view passed on. */
const whoami = new FunctionTool((_args, ctx) => ({ user: ctx.user ?? null, callId: ctx.callId }), {
  name: 'whoami',
  description: 'Says whom the call is for.',
  parameters: z.object({}),
});
const tellJoke = new FunctionTool(({ topic }) => `a joke about ${topic}`, {
  name: 'tell-joke',
  description: 'Tells a joke.',
  parameters: z.object({ topic: z.string() }),
});
const tellTime = new FunctionTool(() => 'noon', {
  name: 'tell-time',
  description: 'Tells the time.',
  parameters: z.object({}),
});
const deleteAll = new FunctionTool(() => 'deleted', {
  name: 'delete-all',
  description: 'Deletes everything.',
  parameters: z.object({}),
});

function key(name: string, fields: Partial<Principal> = {}): Principal {
  return { name, roles: ['caller'], via: 'key', ...fields };
}

function fixture(principal: Principal, hooks: { results?: ToolResultEvent[] } = {}) {
  const denied: AccessDeniedEvent[] = [];
  const policy = new AccessPolicy({ adminToken: 'owner', onDenied: (event) => void denied.push(event) });
  const tools = new ToolSet([whoami, tellJoke, tellTime, deleteAll], {
    hooks: { onResult: (event) => void hooks.results?.push(event) },
  });
  const view = policyTools(policy, principal, tools, { user: 'alice', surface: 'mcp', remote: '10.0.0.7' });
  return { policy, tools, view, denied };
}

function assertDenied(result: ToolResult, name: string, code: string, ...fragments: string[]): void {
  assert.equal(result.isError, true);
  assert.equal(result.name, name);
  assert.ok(result.error instanceof ToolError, 'a ToolError');
  assert.equal(result.error.code, code);
  assert.equal(result.error.toolName, name);
  assert.equal(result.content, result.error.message);
  for (const fragment of fragments)
    assert.ok(result.content.includes(fragment), `${result.content} ∌ ${fragment}`);
}

describe('policyTools', () => {
  test('list and get show only the tools the globs allow', () => {
    const { view } = fixture(key('bot', { tools: ['tell-*', 'whoami'] }));
    assert.deepEqual(
      view.list().map((t) => t.name),
      ['whoami', 'tell-joke', 'tell-time'],
    );
    assert.equal(view.get('tell-joke'), tellJoke);
    assert.equal(view.get('delete-all'), undefined);
    assert.equal(view.get('nope'), undefined);
  });

  test('a kept view follows a role edit, though the tools did not change (an MCP session keeps its view)', async (t) => {
    const store = new MemoryConfigStore();
    await store.put('role', 'caller', { tools: ['tell-*'] });
    const policy = new AccessPolicy({ adminToken: 'owner', store });
    await policy.start();
    t.after(() => policy.close());
    const view = policyTools(policy, key('bot'), new ToolSet([whoami, tellJoke, tellTime]), {
      user: 'alice',
      surface: 'mcp',
    });
    assert.deepEqual(
      view.list().map((x) => x.name),
      ['tell-joke', 'tell-time'],
    );
    await store.put('role', 'caller', { tools: ['whoami'] });
    for (let i = 0; i < 100 && view.list().length !== 1; i++) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(
      view.list().map((x) => x.name),
      ['whoami'],
    );
  });

  test('a principal without globs sees every tool', () => {
    const { view } = fixture(key('free'));
    assert.equal(view.list().length, 4);
    assert.equal(view.get('delete-all'), deleteAll);
  });

  test('an allowed call runs for the verified user, with the caller’s call id', async () => {
    const results: ToolResultEvent[] = [];
    const { view, denied } = fixture(key('bot', { user: 'mallory', tools: ['whoami', 'tell-*'] }), {
      results,
    });
    // The view's user wins over a user in the call options and over the principal's own.
    const result = await view.call('whoami', {}, { callId: 'call-1', user: 'eve' });
    assert.equal(result.isError, false, result.content);
    assert.deepEqual(JSON.parse(result.content), { user: 'alice', callId: 'call-1' });
    assert.equal(result.callId, 'call-1');
    const joke = await view.call('tell-joke', '{"topic":"cats"}');
    assert.equal(joke.content, 'a joke about cats');
    assert.deepEqual(denied, []);
    assert.deepEqual(
      results.map((r) => [r.name, r.user]),
      [
        ['whoami', 'alice'],
        ['tell-joke', 'alice'],
      ],
    );
  });

  test('the caller option is passed on when given', async () => {
    const results: ToolResultEvent[] = [];
    const policy = new AccessPolicy({ adminToken: 'owner' });
    const tools = new ToolSet([whoami], { hooks: { onResult: (event) => void results.push(event) } });
    const view = policyTools(policy, key('bot'), tools, {
      user: 'alice',
      surface: 'mcp',
      caller: 'mcp:bot@x',
    });
    await view.call('whoami', {}, { caller: 'spoofed' });
    assert.equal(results[0]?.caller, 'mcp:bot@x');
    const plain = policyTools(policy, key('bot'), tools, { user: 'alice', surface: 'mcp' });
    await plain.call('whoami', {}, { caller: 'own' });
    assert.equal(results[1]?.caller, 'own');
  });

  test('a tool outside the globs: forbidden, rule tool-policy, told to onDenied, not run', async () => {
    const results: ToolResultEvent[] = [];
    const { view, denied } = fixture(key('bot', { tools: ['tell-*'] }), { results });
    const result = await view.call('delete-all', {}, { callId: 'c-9' });
    assertDenied(result, 'delete-all', 'forbidden', "principal 'bot' may not use tool 'delete-all'");
    assert.equal(result.callId, 'c-9');
    assert.deepEqual(results, [], 'the tool set never saw the call');
    assert.equal(denied.length, 1);
    assert.deepEqual(denied[0], {
      status: 403,
      code: 'forbidden',
      rule: 'tool-policy',
      reason: result.content,
      surface: 'mcp',
      method: 'tools/call',
      path: '/mcp',
      remote: '10.0.0.7',
      principal: 'bot',
      user: 'alice',
      tool: 'delete-all',
    });
  });

  test('an approver (no call-tools) sees the tools but gets forbidden, rule role', async () => {
    const { view, denied } = fixture(key('reviewer', { roles: ['approver'] }));
    assert.equal(view.list().length, 4);
    const result = await view.call('tell-time', {});
    assertDenied(
      result,
      'tell-time',
      'forbidden',
      "principal 'reviewer' may not call tools",
      'admin or caller',
    );
    assert.equal(typeof result.callId, 'string');
    assert.ok(result.callId.length > 0);
    assert.equal(denied.length, 1);
    assert.equal(denied[0]?.rule, 'role');
    assert.equal(denied[0]?.status, 403);
  });

  test('over its rate: rate-limited, status 429, rule rate', async () => {
    const { view, denied } = fixture(key('fast', { rate: parseRate('1/h') }));
    assert.equal((await view.call('tell-time', {})).isError, false);
    const result = await view.call('tell-time', {});
    assertDenied(result, 'tell-time', 'rate-limited', "principal 'fast' is over its rate of 1/h");
    assert.equal(denied.length, 1);
    assert.equal(denied[0]?.status, 429);
    assert.equal(denied[0]?.code, 'rate-limited');
    assert.equal(denied[0]?.rule, 'rate');
  });

  test('over its in-flight cap: too-many-requests; the slot is freed when the call ends', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const slow = new FunctionTool(() => held.then(() => 'done'), {
      name: 'slow',
      description: 'Waits.',
      parameters: z.object({}),
    });
    const denied: AccessDeniedEvent[] = [];
    const policy = new AccessPolicy({ adminToken: 'owner' });
    const view = policyTools(policy, key('one', { maxInFlight: 1 }), new ToolSet([slow, tellTime]), {
      user: 'alice',
      surface: 'agent',
      onDenied: (event) => void denied.push(event),
    });
    const running = view.call('slow', {});
    const second = await view.call('tell-time', {});
    assertDenied(second, 'tell-time', 'too-many-requests', 'maxInFlight 1');
    assert.equal(denied[0]?.rule, 'in-flight');
    assert.equal(denied[0]?.surface, 'agent');
    release();
    assert.equal((await running).content, 'done');
    assert.equal((await view.call('tell-time', {})).content, 'noon');
  });

  test('a failing call frees its slot too', async () => {
    const policy = new AccessPolicy({ adminToken: 'owner' });
    const principal = key('one', { maxInFlight: 1 });
    const view = policyTools(policy, principal, new ToolSet([tellJoke]), { user: 'alice', surface: 'mcp' });
    const bad = await view.call('tell-joke', { topic: 3 });
    assert.equal(bad.error?.code, 'invalid-arguments');
    assert.equal(policy.admit(principal).ok, true);
  });

  test('onChange is passed through when the provider has one', () => {
    const policy = new AccessPolicy({ adminToken: 'owner' });
    const listeners: (() => void)[] = [];
    const provider: ObservableToolProvider = {
      list: () => [tellTime],
      get: () => tellTime,
      call: () => Promise.reject(new Error('unused')),
      onChange: (listener) => listeners.push(listener),
    };
    const view = policyTools(policy, key('bot'), provider, { user: 'alice', surface: 'mcp' });
    let told = 0;
    view.onChange?.(() => told++);
    listeners.forEach((listener) => listener());
    assert.equal(told, 1);
    const plain = policyTools(policy, key('bot'), new ToolSet([tellTime]), { user: 'alice', surface: 'mcp' });
    assert.equal(plain.onChange, undefined);
  });
});

describe('toolsMatching', () => {
  test('narrows list, get and call to the globs', async () => {
    const view = toolsMatching(new ToolSet([whoami, tellJoke, deleteAll]), ['tell-*', 'whoami']);
    assert.deepEqual(
      view.list().map((t) => t.name),
      ['whoami', 'tell-joke'],
    );
    assert.equal(view.get('delete-all'), undefined);
    assert.equal((await view.call('tell-joke', { topic: 'dogs' })).content, 'a joke about dogs');
    assertDenied(await view.call('delete-all', {}), 'delete-all', 'forbidden', 'tell-*, whoami');
    const none = toolsMatching(new ToolSet([whoami]), []);
    assertDenied(await none.call('whoami', {}), 'whoami', 'forbidden', '(none)');
  });
});
