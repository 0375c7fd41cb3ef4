/**
 * @module Calls a caller comes back to, on a real `toolbus up` (embedded: memory bus, SQLite) running the
 * durable example `examples/report-service.ts`: `POST …/invoke?async=1` answers 202 with the call id,
 * `GET /api/v1/calls/{id}` and its event stream show the progress and the result, `toolbus call
 * --async`, `--result --follow` and `--cancel` do the same from a shell, and the result is still there
 * after `up` restarted. A call that was running when `up` was killed is reported failed, saying that
 * crash recovery needs NATS.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { interrupt, runCli, startCli } from '../support/cli.js';
import { startNatsServer } from '../support/nats-server.js';
import { Client, StreamableHTTPClientTransport, specTypeSchemas } from '@modelcontextprotocol/client';
import { readServerSentEvents } from '../../src/cli/gateway-client.js';

const TOKEN = 'async-calls-admin-token-0123456789';
const homes: string[] = [];

after(async () => {
  for (const home of homes) await rm(home, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
});

interface Up {
  child: ChildProcess;
  url: string;
}

function env(home: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TOOLBUS_HOME: home,
    TOOLBUS_TOKEN: TOKEN,
    REPORT_SECTION_MS: '100',
    ...extra,
  };
}

async function startUp(home: string, extra: NodeJS.ProcessEnv = {}): Promise<Up> {
  const up = await startCli(
    ['up', '--port', '0', '--no-examples', '--service', 'examples/report-service.ts'],
    env(home, extra),
    /Press Ctrl-C to stop\./,
  );
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())?.[1];
  assert.ok(url, up.output());
  return { child: up.child, url };
}

function api(up: Up, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${up.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...init.headers },
  });
}

interface CallJson {
  id: string;
  status: string;
  done: boolean;
  chunkCount: number;
  chunks?: string[];
  response?: string;
  error?: { type: string; message: string };
  tool?: string;
  user?: string;
}

async function waitForTool(up: Up, name: string): Promise<void> {
  const end = Date.now() + 15_000;
  for (;;) {
    const body = (await (await api(up, '/api/v1/tools')).json()) as { tools: { name: string }[] };
    if (body.tools.some((t) => t.name === name)) return;
    if (Date.now() > end) throw new Error(`tool '${name}' did not appear`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

test('async calls through toolbus up: 202, state, events, the CLI, and the result after a restart', async () => {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-async-'));
  homes.push(home);
  let up = await startUp(home);
  let id: string;
  let lostId: string;
  try {
    await waitForTool(up, 'build-report');
    const started = await api(up, '/api/v1/tools/build-report/invoke?async=1&user=dana', {
      method: 'POST',
      body: JSON.stringify({ topic: 'sales', sections: 3 }),
    });
    assert.equal(started.status, 202);
    id = ((await started.json()) as { call: string }).call;
    assert.match(id, /^task-[0-9a-f-]{36}$/);
    assert.equal(started.headers.get('location'), `/api/v1/calls/${id}`);

    // The event stream: states as the sections come, then the result.
    const events = await api(up, `/api/v1/calls/${id}/events`, { headers: { accept: 'text/event-stream' } });
    assert.equal(events.status, 200);
    const seen: { event: string; data: CallJson }[] = [];
    for await (const e of readServerSentEvents(events.body!)) {
      seen.push({ event: e.event ?? 'message', data: JSON.parse(e.data) as CallJson });
    }
    const last = seen.at(-1)!;
    assert.equal(last.event, 'done');
    assert.equal(last.data.status, 'completed');
    assert.equal(
      last.data.response,
      'Section 1 of 3 on sales: done.\nSection 2 of 3 on sales: done.\nSection 3 of 3 on sales: done.\n' +
        'Report on sales for dana: 3 sections.',
    );
    assert.ok(
      seen.some((e) => e.event === 'state' && e.data.chunkCount > 0),
      `progress was streamed: ${JSON.stringify(seen.map((e) => [e.event, e.data.status, e.data.chunkCount]))}`,
    );
    const state = (await (await api(up, `/api/v1/calls/${id}`)).json()) as { call: CallJson };
    assert.equal(state.call.status, 'completed');
    assert.equal(state.call.tool, 'build-report');
    assert.equal(state.call.user, 'dana');

    // Bad requests say what was wrong.
    const unknown = await api(up, '/api/v1/calls/task-00000000-0000-0000-0000-000000000000');
    assert.equal(unknown.status, 404);
    assert.match(((await unknown.json()) as { error: { message: string } }).error.message, /no call 'task-0/);
    const noTool = await api(up, '/api/v1/tools/no-such-tool/invoke?async=1', { method: 'POST', body: '{}' });
    assert.equal(noTool.status, 404);
    const noToken = await fetch(`${up.url}/api/v1/calls/${id}`);
    assert.equal(noToken.status, 401);

    // The CLI: start, follow, cancel.
    const cliEnv = env(home);
    const asyncRun = await runCli(
      ['call', 'build-report', 'topic=q3', 'sections:=2', '--async', '--url', up.url],
      cliEnv,
    );
    assert.equal(asyncRun.code, 0, asyncRun.stderr);
    const cliId = asyncRun.stdout.trim();
    assert.match(cliId, /^task-/);
    assert.match(asyncRun.stderr, /toolbus call --result task-.* --follow/);
    const follow = await runCli(['call', '--result', cliId, '--follow', '--url', up.url], cliEnv);
    assert.equal(follow.code, 0, follow.stderr);
    assert.equal(
      follow.stdout,
      'Section 1 of 2 on q3: done.\nSection 2 of 2 on q3: done.\nReport on q3 for anonymous: 2 sections.\n',
    );
    const long = await runCli(
      ['call', 'build-report', 'topic=x', 'sections:=20', '--async', '--url', up.url],
      cliEnv,
    );
    const longId = long.stdout.trim();
    const cancel = await runCli(['call', '--cancel', longId, '--json', '--url', up.url], cliEnv);
    assert.equal(cancel.code, 0, cancel.stderr);
    const after = await waitForStatus(up, longId, 'cancelled');
    const badReason = await api(up, `/api/v1/calls/${longId}/cancel`, {
      method: 'POST',
      body: '{"reason": 5}',
    });
    assert.equal(badReason.status, 400);
    assert.match(await badReason.text(), /'reason' must be a string, got number/);
    const notJson = await fetch(`${up.url}/api/v1/calls/${longId}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain' },
      body: 'stop',
    });
    assert.equal(notJson.status, 415);
    assert.match(after.error?.message ?? '', /cancelled/);
    const notYet = await runCli(['call', '--result', longId, '--url', up.url], cliEnv);
    assert.equal(notYet.code, 1);
    assert.match(notYet.stderr, /^cancelled \(cancelled\): /);
    // MCP: the same call as a task of an MCP client (2025-11-25 tasks), left and picked up again by a
    // second session of the same principal.
    const mcpUrl = new URL(`${up.url}/mcp`);
    const headers = { authorization: `Bearer ${TOKEN}` };
    const first = new Client(
      { name: 'async-test', version: '1' },
      { versionNegotiation: { mode: 'legacy' } },
    );
    await first.connect(new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers } }));
    const created = await first.request(
      {
        method: 'tools/call',
        params: { name: 'build-report', arguments: { topic: 'mcp', sections: 2 }, task: { ttl: 60_000 } },
      },
      specTypeSchemas.CreateTaskResult,
    );
    const taskId = created.task.taskId;
    assert.equal(created.task.status, 'working');
    await first.close();
    const second = new Client(
      { name: 'async-test', version: '1' },
      { versionNegotiation: { mode: 'legacy' } },
    );
    await second.connect(new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers } }));
    try {
      const result = await second.request(
        { method: 'tasks/result', params: { taskId } },
        specTypeSchemas.CallToolResult,
      );
      assert.deepEqual(result.content.at(-1), {
        type: 'text',
        text: 'Section 1 of 2 on mcp: done.\nSection 2 of 2 on mcp: done.\nReport on mcp for anonymous: 2 sections.',
      });
      const task = await second.request(
        { method: 'tasks/get', params: { taskId } },
        specTypeSchemas.GetTaskResult,
      );
      assert.equal(task.status, 'completed');
      // The MCP task is a call like the others: its state is at /api/v1/calls/{id} too.
      const viaApi = await waitForStatus(up, taskId, 'completed');
      assert.equal(viaApi.tool, 'build-report');
    } finally {
      await second.close();
    }

    const usage = await runCli(['call', '--result', longId, '--nats', 'nats://127.0.0.1:1'], cliEnv);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--result works through a running toolbus up/);
  } finally {
    await interrupt(up.child);
  }

  // A new process on the same home: the result is still there (the SQLite call store).
  up = await startUp(home);
  try {
    const again = (await (await api(up, `/api/v1/calls/${id}`)).json()) as { call: CallJson };
    assert.equal(again.call.status, 'completed');
    assert.match(again.call.response ?? '', /Report on sales for dana/);
    // A call running when its process is killed: the embedded queue dies with it. Once its lease ran
    // out, reading it says so and how to get crash recovery.
    await waitForTool(up, 'build-report');
    const started = await api(up, '/api/v1/tools/build-report/invoke?async=1', {
      method: 'POST',
      body: JSON.stringify({ topic: 'lost', sections: 20 }),
    });
    lostId = ((await started.json()) as { call: string }).call;
    await waitForStatus(up, lostId, 'running');
    up.child.kill('SIGKILL');
    await new Promise((resolve) => up.child.once('exit', resolve));
  } finally {
    if (up.child.exitCode === null && up.child.signalCode === null) await interrupt(up.child);
  }
  up = await startUp(home, { TOOLBUS_CALL_LEASE_MS: '300' });
  try {
    await new Promise((resolve) => setTimeout(resolve, 400));
    const lost = await runCli(['call', '--result', lostId, '--url', up.url], env(home));
    assert.equal(lost.code, 1);
    assert.match(lost.stderr, /^failed \(unavailable\): the process that ran call 'task-.*only on NATS/);
  } finally {
    await interrupt(up.child);
  }
});

async function waitForStatus(up: Up, id: string, status: string, ms = 15_000): Promise<CallJson> {
  const end = Date.now() + ms;
  for (;;) {
    const body = (await (await api(up, `/api/v1/calls/${id}`)).json()) as { call: CallJson };
    if (body.call.status === status) return body.call;
    if (Date.now() > end) throw new Error(`call ${id} is ${body.call.status}, not ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
}

test('on NATS: a task outlives both the replica running it and the toolbus up that started it', async (t) => {
  const nats = await startNatsServer({ jetstream: true });
  const home = await mkdtemp(join(tmpdir(), 'toolbus-async-nats-'));
  homes.push(home);
  const natsEnv = env(home, { REPORT_SECTION_MS: '400', REPORT_ACK_WAIT_MS: '1000' });
  const children: ChildProcess[] = [];
  t.after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await nats.stop();
  });
  const startGateway = async (): Promise<Up> => {
    const started = await startCli(
      ['up', '--nats', nats.url, '--port', '0', '--no-examples'],
      natsEnv,
      /Press Ctrl-C to stop\./,
    );
    children.push(started.child);
    const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(started.output())?.[1];
    assert.ok(url, started.output());
    return { child: started.child, url };
  };
  const startReplica = async (): Promise<ChildProcess> => {
    const started = await startCli(
      ['service', 'examples/report-service.ts', '--nats', nats.url],
      natsEnv,
      /running \(1 replica\)/,
    );
    children.push(started.child);
    return started.child;
  };
  let gateway = await startGateway();
  const first = await startReplica();
  await waitForTool(gateway, 'build-report');
  const started = await api(gateway, '/api/v1/tools/build-report/invoke?async=1', {
    method: 'POST',
    body: JSON.stringify({ topic: 'resilience', sections: 20 }),
  });
  assert.equal(started.status, 202);
  const id = ((await started.json()) as { call: string }).call;
  const running = await waitForStatus(gateway, id, 'running');
  // Both go: the replica running the report, and the gateway the caller started it through.
  first.kill('SIGKILL');
  gateway.child.kill('SIGKILL');
  await Promise.all([once(first, 'exit'), once(gateway.child, 'exit')]);
  // Killed well before the end (20 sections of 400 ms: room for a slow poll on a loaded machine), or
  // the kill came too late to test anything.
  assert.ok(running.chunkCount < 15, `killed at section ${running.chunkCount}`);
  await startReplica();
  gateway = await startGateway();
  const done = await waitForStatus(gateway, id, 'completed', 30_000);
  assert.match(
    done.response ?? '',
    /Report on resilience for anonymous: 20 sections \(finished on attempt [2-9]\)\./,
  );
  await interrupt(gateway.child);
});
