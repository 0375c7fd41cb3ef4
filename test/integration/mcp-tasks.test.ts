/**
 * MCP tasks (2025-11-25 "tasks" utility) served by `createMcpHttpHandler(tools, { tasks })` over real
 * Streamable HTTP on 127.0.0.1, checked with the official client (`@modelcontextprotocol/client`): the
 * task methods go out as raw JSON-RPC through `client.request` with the SDK's wire schemas.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import {
  Client,
  InMemoryTransport,
  StreamableHTTPClientTransport,
  specTypeSchemas,
} from '@modelcontextprotocol/client';
import { z } from 'zod';
import {
  createMcpHttpHandler,
  createMcpServer,
  type McpHttpHandlerOptions,
  type McpHttpRequest,
} from '../../src/adapters/mcp/index.js';
import { MemoryBus } from '../../src/bus/index.js';
import { CallTasks } from '../../src/services/index.js';
import { FunctionTool, ToolSet, type Tool as ToolbusTool } from '../../src/tools/index.js';
import { waitFor } from '../fixtures/mcp-spawn.js';

const RELATED_TASK = 'io.modelcontextprotocol/related-task';

interface Probe {
  started: number;
  finished: number;
  aborted: number;
}

function makeTools(probe: Probe): ToolbusTool[] {
  return [
    new FunctionTool(
      ({ ms, text }: { ms: number; text: string }, ctx) =>
        new Promise<string>((resolve, reject) => {
          probe.started += 1;
          const timer = setTimeout(() => {
            probe.finished += 1;
            resolve(`slept ${ms} ms: ${text}`);
          }, ms);
          ctx.signal.addEventListener(
            'abort',
            () => {
              probe.aborted += 1;
              clearTimeout(timer);
              reject(new Error('aborted'));
            },
            { once: true },
          );
        }),
      {
        name: 'slow',
        description: 'Sleeps, then echoes',
        parameters: z.object({ ms: z.number(), text: z.string() }),
      },
    ),
    new FunctionTool(
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 50));
        throw new Error('disk on fire');
      },
      { name: 'explode', description: 'Always fails', parameters: z.object({}) },
    ),
  ];
}

interface Served {
  url: URL;
  tasks: CallTasks;
  probe: Probe;
}

/** A real HTTP server on 127.0.0.1 (free port) with the MCP handler; closed when the test ends. */
async function serve(
  t: TestContext,
  options: McpHttpHandlerOptions = {},
  requestOf?: (req: IncomingMessage) => McpHttpRequest | undefined,
  withTasks = true,
): Promise<Served> {
  const bus = new MemoryBus();
  const tasks = new CallTasks(bus);
  const probe: Probe = { started: 0, finished: 0, aborted: 0 };
  const handler = createMcpHttpHandler(new ToolSet(makeTools(probe)), {
    ...options,
    ...(withTasks ? { tasks } : {}),
  });
  const http = createServer((req, res) => void handler(req, res, requestOf?.(req)));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    await handler.close();
    await tasks.close();
    await bus.close();
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  });
  return { url: new URL(`http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`), tasks, probe };
}

async function connect(
  t: TestContext,
  url: URL,
  mode: 'legacy' | 'auto' = 'legacy',
  headers: Record<string, string> = {},
): Promise<Client> {
  const client = new Client({ name: 'tasks-test', version: '1' }, { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  t.after(() => client.close());
  return client;
}

function startTask(client: Client, name: string, args: Record<string, unknown>, ttl = 60_000) {
  return client.request(
    { method: 'tools/call', params: { name, arguments: args, task: { ttl } } },
    specTypeSchemas.CreateTaskResult,
  );
}

function getTask(client: Client, taskId: string) {
  return client.request({ method: 'tasks/get', params: { taskId } }, specTypeSchemas.GetTaskResult);
}

function taskResult(client: Client, taskId: string) {
  return client.request({ method: 'tasks/result', params: { taskId } }, specTypeSchemas.CallToolResult);
}

function cancelTask(client: Client, taskId: string) {
  return client.request({ method: 'tasks/cancel', params: { taskId } }, specTypeSchemas.CancelTaskResult);
}

function listTasks(client: Client, cursor?: string) {
  return client.request(
    { method: 'tasks/list', params: cursor === undefined ? {} : { cursor } },
    specTypeSchemas.ListTasksResult,
  );
}

function textOf(result: { content: { type: string; text?: string }[] }): string {
  return result.content.map((c) => c.text ?? '').join('');
}

/** Asserts `promise` rejects with JSON-RPC error `code`, its message matching `message`. */
async function rejectsWith(promise: Promise<unknown>, code: number, message: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    const e = error as { code?: unknown; message?: unknown };
    assert.equal(e.code, code, String(e.message));
    assert.match(String(e.message), message);
    return true;
  });
}

describe('MCP tasks over Streamable HTTP (2025 sessions)', { timeout: 30_000 }, () => {
  test('taskSupport is listed; a task call answers at once; get shows working then completed; result returns the text', async (t) => {
    const { url, probe } = await serve(t);
    const client = await connect(t, url);
    assert.equal(client.getProtocolEra(), 'legacy');
    assert.deepEqual(client.getServerCapabilities()?.tasks, {
      list: {},
      cancel: {},
      requests: { tools: { call: {} } },
    });
    const { tools } = await client.listTools();
    assert.deepEqual(
      tools.map((tool) => [tool.name, tool.execution?.taskSupport]),
      [
        ['slow', 'optional'],
        ['explode', 'optional'],
      ],
    );

    const before = Date.now();
    const created = await startTask(client, 'slow', { ms: 1500, text: 'hello' }, 60_000);
    const answeredIn = Date.now() - before;
    assert.equal(probe.finished, 0, 'the CreateTaskResult came after the tool finished');
    assert.ok(answeredIn < 1000, `the CreateTaskResult took ${answeredIn} ms`);
    const { task } = created;
    assert.match(task.taskId, /^task-/);
    assert.equal(task.status, 'working');
    assert.equal(task.ttl, 60_000);
    assert.equal(typeof task.pollInterval, 'number');
    assert.ok(Number.isFinite(Date.parse(task.createdAt)), task.createdAt);
    assert.equal(new Date(task.createdAt).toISOString(), task.createdAt);
    assert.ok(Number.isFinite(Date.parse(task.lastUpdatedAt)), task.lastUpdatedAt);

    const working = await getTask(client, task.taskId);
    assert.equal(working.taskId, task.taskId);
    assert.equal(working.status, 'working');
    assert.equal(working.createdAt, task.createdAt);
    assert.equal(working.ttl, 60_000);

    // tasks/result blocks until the task is over, then answers what tools/call would have.
    const result = await taskResult(client, task.taskId);
    assert.equal(probe.finished, 1);
    assert.equal(textOf(result), 'slept 1500 ms: hello');
    assert.equal(result.isError, undefined);
    assert.deepEqual(result._meta?.[RELATED_TASK], { taskId: task.taskId });

    const completed = await getTask(client, task.taskId);
    assert.equal(completed.status, 'completed');
    assert.equal(completed.statusMessage, undefined);
    assert.ok(Date.parse(completed.lastUpdatedAt) >= Date.parse(completed.createdAt));
    // The result can be fetched again (until the ttl is over).
    assert.equal(textOf(await taskResult(client, task.taskId)), 'slept 1500 ms: hello');

    const listed = await listTasks(client);
    assert.deepEqual(
      listed.tasks.map((x) => [x.taskId, x.status]),
      [[task.taskId, 'completed']],
    );
    assert.equal(listed.nextCursor, undefined);

    // A call without params.task is answered as before.
    const plain = await client.callTool({ name: 'slow', arguments: { ms: 1, text: 'now' } });
    assert.equal(textOf(plain as never), 'slept 1 ms: now');
  });

  test("a failing tool's task ends failed with its message", async (t) => {
    const { url } = await serve(t);
    const client = await connect(t, url);
    const { task } = await startTask(client, 'explode', {});
    assert.equal(task.status, 'working');
    const result = await taskResult(client, task.taskId);
    assert.equal(result.isError, true);
    assert.match(textOf(result), /disk on fire/);
    assert.deepEqual(result._meta?.[RELATED_TASK], { taskId: task.taskId });
    const failed = await getTask(client, task.taskId);
    assert.equal(failed.status, 'failed');
    assert.match(failed.statusMessage ?? '', /disk on fire/);
    // A terminal task cannot be cancelled (-32602).
    await rejectsWith(cancelTask(client, task.taskId), -32602, /terminal status 'failed'/);
  });

  test('tasks/cancel of a running task ends it cancelled and aborts the tool', async (t) => {
    const { url, probe } = await serve(t);
    const client = await connect(t, url);
    const { task } = await startTask(client, 'slow', { ms: 10_000, text: 'never' });
    assert.ok(await waitFor(() => probe.started === 1, 5000, 10), 'the tool never started');
    assert.equal((await getTask(client, task.taskId)).status, 'working');

    const pending = taskResult(client, task.taskId);
    const cancelled = await cancelTask(client, task.taskId);
    assert.equal(cancelled.taskId, task.taskId);
    assert.equal(cancelled.status, 'cancelled');
    assert.ok(cancelled.statusMessage);
    assert.ok(await waitFor(() => probe.aborted === 1, 5000, 10), "the tool's signal never aborted");

    const result = await pending;
    assert.equal(result.isError, true);
    assert.match(textOf(result), /cancel/);
    const after = await getTask(client, task.taskId);
    assert.equal(after.status, 'cancelled');
    assert.equal(probe.finished, 0);
    await rejectsWith(cancelTask(client, task.taskId), -32602, /terminal status 'cancelled'/);
  });

  test('an unknown task id, an unknown tool and a bad cursor give -32602', async (t) => {
    const { url } = await serve(t);
    const client = await connect(t, url);
    for (const call of [
      getTask(client, 'task-00000000-0000-4000-8000-000000000000'),
      taskResult(client, 'no-such-task'),
      cancelTask(client, 'no-such-task'),
    ]) {
      await rejectsWith(call, -32602, /Failed to retrieve task: task '.*' not found/);
    }
    await rejectsWith(startTask(client, 'missing', {}), -32602, /unknown tool 'missing'/);
    await rejectsWith(listTasks(client, 'not-a-cursor'), -32602, /Invalid cursor/);
  });

  test("a second session cannot read, wait for, cancel or list the first session's task", async (t) => {
    const { url, probe } = await serve(t);
    const first = await connect(t, url);
    const second = await connect(t, url);
    const { task } = await startTask(first, 'slow', { ms: 300, text: 'mine' });
    await rejectsWith(getTask(second, task.taskId), -32602, /not found/);
    await rejectsWith(taskResult(second, task.taskId), -32602, /not found/);
    await rejectsWith(cancelTask(second, task.taskId), -32602, /not found/);
    assert.deepEqual((await listTasks(second)).tasks, []);
    // The owner still has it, uncancelled.
    assert.equal(textOf(await taskResult(first, task.taskId)), 'slept 300 ms: mine');
    assert.equal(probe.aborted, 0);
  });

  test("with a principal, the principal's other sessions see its tasks and another principal's do not", async (t) => {
    const { url } = await serve(t, {}, (req) => {
      const principal = req.headers['x-principal'];
      return typeof principal === 'string' ? { principal } : undefined;
    });
    const alice1 = await connect(t, url, 'legacy', { 'x-principal': 'alice' });
    const alice2 = await connect(t, url, 'legacy', { 'x-principal': 'alice' });
    const bob = await connect(t, url, 'legacy', { 'x-principal': 'bob' });
    const { task } = await startTask(alice1, 'slow', { ms: 100, text: 'alice' });
    assert.equal(textOf(await taskResult(alice2, task.taskId)), 'slept 100 ms: alice');
    assert.equal((await getTask(alice2, task.taskId)).status, 'completed');
    await rejectsWith(getTask(bob, task.taskId), -32602, /not found/);
    assert.deepEqual((await listTasks(bob)).tasks, []);
  });

  test('tasks/list pages through the session tasks', async (t) => {
    const { url } = await serve(t);
    const client = await connect(t, url);
    const ids: string[] = [];
    for (let i = 0; i < 105; i++)
      ids.push((await startTask(client, 'slow', { ms: 1, text: `${i}` })).task.taskId);
    const page1 = await listTasks(client);
    assert.equal(page1.tasks.length, 100);
    assert.ok(page1.nextCursor);
    const page2 = await listTasks(client, page1.nextCursor);
    assert.equal(page2.nextCursor, undefined);
    assert.deepEqual(
      [...page1.tasks, ...page2.tasks].map((x) => x.taskId),
      ids,
    );
  });

  test('a notifications/tasks/status tells when a task ended', async (t) => {
    const { url } = await serve(t);
    const client = await connect(t, url);
    const seen: { taskId: string; status: string }[] = [];
    client.setNotificationHandler(
      'notifications/tasks/status',
      { params: z.looseObject({ taskId: z.string(), status: z.string() }) },
      (params) => {
        seen.push({ taskId: params.taskId, status: params.status });
      },
    );
    // Let the session's GET stream (where the notification goes) open.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const { task } = await startTask(client, 'slow', { ms: 200, text: 'ping' });
    assert.ok(
      await waitFor(() => seen.some((x) => x.taskId === task.taskId), 5000, 20),
      'no notifications/tasks/status arrived',
    );
    assert.deepEqual(seen, [{ taskId: task.taskId, status: 'completed' }]);
  });
});

describe('MCP tasks of createMcpServer (in-memory transport, 2025 era)', { timeout: 30_000 }, () => {
  test('a task round trip; with toolSearch, search_tools is listed forbidden and refused as a task', async (t) => {
    const bus = new MemoryBus();
    const tasks = new CallTasks(bus);
    t.after(async () => {
      await tasks.close();
      await bus.close();
    });
    const probe: Probe = { started: 0, finished: 0, aborted: 0 };
    const server = createMcpServer(new ToolSet(makeTools(probe)), { tasks, toolSearch: {} });
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client(
      { name: 'tasks-test', version: '1' },
      { versionNegotiation: { mode: 'legacy' } },
    );
    await client.connect(clientSide);
    t.after(() => client.close());
    assert.ok(client.getServerCapabilities()?.tasks);
    const { tools } = await client.listTools();
    assert.deepEqual(
      tools.map((tool) => [tool.name, tool.execution?.taskSupport]),
      [['search_tools', 'forbidden']],
    );
    await rejectsWith(startTask(client, 'search_tools', { query: 'sleep' }), -32601, /forbidden/);
    // Any tool can be called by name, as a task too.
    const { task } = await startTask(client, 'slow', { ms: 50, text: 'in memory' });
    assert.equal(textOf(await taskResult(client, task.taskId)), 'slept 50 ms: in memory');
    assert.equal((await getTask(client, task.taskId)).status, 'completed');
  });
});

describe('MCP tasks are not served when off, or to 2026-07-28 clients', { timeout: 30_000 }, () => {
  test('without the tasks option nothing changes: no capability, no taskSupport, params.task ignored', async (t) => {
    const { url } = await serve(t, {}, undefined, false);
    const client = await connect(t, url);
    assert.equal(client.getServerCapabilities()?.tasks, undefined);
    const { tools } = await client.listTools();
    assert.ok(tools.every((tool) => tool.execution === undefined));
    const result = await client.request(
      { method: 'tools/call', params: { name: 'slow', arguments: { ms: 1, text: 'sync' }, task: {} } },
      specTypeSchemas.CallToolResult,
    );
    assert.equal(textOf(result), 'slept 1 ms: sync');
    await rejectsWith(getTask(client, 'task-x'), -32601, /not found/i);
  });

  test('a 2026-07-28 (stateless) client gets plain calls even with the tasks option', async (t) => {
    const { url } = await serve(t);
    const client = await connect(t, url, 'auto');
    assert.equal(client.getProtocolEra(), 'modern');
    assert.equal(client.getServerCapabilities()?.tasks, undefined);
    const { tools } = await client.listTools();
    assert.ok(tools.every((tool) => tool.execution === undefined));
    const result = await client.callTool({ name: 'slow', arguments: { ms: 1, text: 'modern' } });
    assert.equal(textOf(result as never), 'slept 1 ms: modern');
  });
});
