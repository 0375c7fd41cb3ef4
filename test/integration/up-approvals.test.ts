/**
 * Human approval and resumable runs on a real `toolbus up` (embedded: memory bus, SQLite), with a fake
 * OpenAI server as the model: a tool item with `"approval": "always"`, the SSE event order of a paused
 * run, who may decide (an approver yes; a caller, and the run's own principal, no), edited arguments
 * checked against the schema, a denial reaching the model, a second decision refused with 409, and a
 * `kill -9` of `up` while a run is paused: after a restart, `toolbus approvals approve` finishes the run
 * with the same answer and `toolbus ask --attach` shows it. And on a real `nats-server`: two `up`
 * replicas, the run asked through one and approved through the other.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import {
  chatCompletion,
  startFakeOpenAIServer,
  type FakeOpenAIServer,
} from '../fixtures/fake-openai-server.js';
import { startNatsServer } from '../support/nats-server.js';
import { interrupt, runCli, startCli } from '../support/cli.js';
import { readServerSentEvents } from '../../src/cli/gateway-client.js';

const ADMIN = 'approvals-admin-token-0123456789';

const CAREFUL_JOKE = {
  type: 'tool-service',
  name: 'careful-joke',
  description: 'Tell a joke on a topic, once someone approves',
  service: 'joke-service',
  approval: 'always',
  arguments: [{ name: 'topic', type: 'string', description: 'The topic' }],
};

/** The model: asks for careful-joke about cats, then answers with what the tool (or the denial) said. */
function scriptModel(model: FakeOpenAIServer): { tools: unknown[] } {
  const seen: { tools: unknown[] } = { tools: [] };
  model.replyAlways((request) => {
    seen.tools.push(request.body?.['tools']);
    const messages = (request.body?.['messages'] ?? []) as { role: string; content?: string }[];
    const last = messages[messages.length - 1];
    if (last?.role === 'tool') return { json: chatCompletion({ content: `The tool said: ${last.content}` }) };
    return {
      json: chatCompletion({
        toolCalls: [{ id: 'call_1', name: 'careful-joke', arguments: '{"topic":"cats"}' }],
      }),
    };
  });
  return seen;
}

interface Up {
  child: ChildProcess;
  url: string;
  output(): string;
}

async function startUp(home: string, modelUrl: string, extra: string[] = []): Promise<Up> {
  const up = await startCli(['up', '--port', '0', ...extra], env(home, modelUrl), /Press Ctrl-C to stop\./);
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())?.[1];
  assert.ok(url, up.output());
  return { child: up.child, url, output: up.output };
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

function req(url: string, token: string, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers },
  });
}

async function addPrincipal(
  home: string,
  modelUrl: string,
  name: string,
  flags: string[],
  where: string[] = [],
): Promise<string> {
  const run = await runCli(['principal', 'add', name, ...flags, ...where], env(home, modelUrl));
  assert.equal(run.code, 0, run.stderr);
  const token = /tbk_[A-Za-z0-9_-]{43}/.exec(run.stdout)?.[0];
  assert.ok(token, run.stdout);
  return token;
}

/** Puts the careful-joke item and waits until the registry serves it. */
async function putCarefulJoke(url: string): Promise<void> {
  const put = await req(url, ADMIN, '/api/v1/config/tool/careful-joke', {
    method: 'PUT',
    body: JSON.stringify(CAREFUL_JOKE),
  });
  assert.equal(put.status, 200, await put.text());
  for (let i = 0; i < 100; i++) {
    const list = (await (await req(url, ADMIN, '/api/v1/tools?fresh=1')).json()) as {
      tools: { name: string }[];
    };
    if (list.tools.some((t) => t.name === 'careful-joke')) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail('careful-joke never went live');
}

/** An agent question as SSE: its run id, and its events as they come. */
async function ask(
  url: string,
  question: string,
): Promise<{ runId: string; events: AsyncGenerator<{ event: string; data: string }> }> {
  const response = await req(url, ADMIN, '/api/v1/agent', {
    method: 'POST',
    body: JSON.stringify({ question }),
    headers: { accept: 'text/event-stream' },
  });
  assert.equal(response.status, 200);
  const runId = response.headers.get('toolbus-run');
  assert.match(runId ?? '', /^run-[0-9a-f-]{36}$/);
  return { runId: runId!, events: readServerSentEvents(response.body!) };
}

/** Reads events until `until` (inclusive); resolves with them. */
async function readUntil(
  events: AsyncGenerator<{ event: string; data: string }>,
  until: string,
): Promise<{ event: string; data: Record<string, unknown> }[]> {
  const seen: { event: string; data: Record<string, unknown> }[] = [];
  for (;;) {
    const next = await events.next();
    if (next.done) return seen;
    seen.push({ event: next.value.event, data: JSON.parse(next.value.data) as Record<string, unknown> });
    if (next.value.event === until) return seen;
  }
}

/** Stops an `up` unless it is gone already (a `kill -9` leaves no exit code, only a signal). */
async function stop(up: Up): Promise<void> {
  if (up.child.exitCode === null && up.child.signalCode === null) await interrupt(up.child);
}

async function tempHome(t: TestContext): Promise<string> {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-approvals-'));
  t.after(() => rm(home, { recursive: true, force: true }));
  return home;
}

test('toolbus up: a run pauses for approval, only an approver other than its principal decides, and its SSE stream goes thought, approval, observation, answer', async (t) => {
  const model = await startFakeOpenAIServer();
  t.after(() => model.close());
  const seen = scriptModel(model);
  const home = await tempHome(t);
  const up = await startUp(home, model.baseURL);
  t.after(async () => void (await interrupt(up.child)));
  await putCarefulJoke(up.url);
  // "approval" is a field of every tool item, not a config param the service would be warned about.
  const health = (await (await req(up.url, ADMIN, '/api/v1/health')).json()) as { problems: unknown[] };
  assert.deepEqual(health.problems, []);
  const bob = await addPrincipal(home, model.baseURL, 'bob', ['--role', 'approver']);
  const carol = await addPrincipal(home, model.baseURL, 'carol', ['--role', 'caller']);

  // Bad requests are 4xx saying what was expected.
  const bad: [string, RequestInit | undefined, number, RegExp][] = [
    [
      '/api/v1/approvals?status=maybe',
      undefined,
      400,
      /status must be one of pending, approved, denied, all/,
    ],
    ['/api/v1/approvals/apr-nope', undefined, 404, /no approval request with id 'apr-nope'/],
    ['/api/v1/approvals/apr-nope', { method: 'POST', body: '{"decision":"approve"' }, 400, /not valid JSON/],
    [
      '/api/v1/approvals/apr-nope',
      { method: 'POST', body: '{"decision":"maybe"}' },
      400,
      /"approve" \| "deny"/,
    ],
    [
      '/api/v1/approvals/apr-nope',
      { method: 'POST', body: '{"decision":"deny","extra":1}' },
      400,
      /unknown field 'extra'/,
    ],
    [
      '/api/v1/approvals/apr-nope',
      { method: 'POST', body: '{"decision":"approve"}' },
      404,
      /no approval request/,
    ],
    ['/api/v1/runs/run-nope', undefined, 404, /no run with id 'run-nope'/],
  ];
  for (const [path, init, status, message] of bad) {
    const response = await req(up.url, bob, path, init);
    const body = (await response.json()) as { error: { message: string } };
    assert.equal(response.status, status, `${path}: ${body.error.message}`);
    assert.match(body.error.message, message);
  }

  const { runId, events } = await ask(up.url, 'Tell me a cat joke');
  const first = await readUntil(events, 'approval');
  assert.deepEqual(
    first.map((e) => e.event),
    ['thought', 'approval'],
  );
  const approval = first[1]!.data['approval'] as Record<string, unknown>;
  assert.equal(approval['runId'], runId);
  assert.equal(approval['tool'], 'careful-joke');
  assert.deepEqual(approval['arguments'], { topic: 'cats' });
  assert.equal(approval['principal'], 'admin');
  assert.equal(approval['status'], 'pending');
  const id = String(approval['id']);
  // The schema the model sees is the tool's own: nothing about approval.
  const offered = (seen.tools[0] as { function: { name: string; parameters: unknown } }[]).find(
    (x) => x.function.name === 'careful-joke',
  );
  assert.deepEqual(offered?.function.parameters, {
    type: 'object',
    properties: { topic: { type: 'string', description: 'The topic' } },
    required: ['topic'],
    additionalProperties: false,
  });

  // Listed for those who may decide; the run shows as paused.
  const list = (await (await req(up.url, bob, '/api/v1/approvals')).json()) as {
    approvals: { id: string }[];
  };
  assert.deepEqual(
    list.approvals.map((a) => a.id),
    [id],
  );
  const paused = (await (await req(up.url, bob, `/api/v1/runs/${runId}`)).json()) as {
    run: { status: string };
  };
  assert.equal(paused.run.status, 'paused');

  // A caller may not decide, nor see the list; the run's own principal may not approve its own call.
  const byCarol = await req(up.url, carol, `/api/v1/approvals/${id}`, {
    method: 'POST',
    body: '{"decision":"approve"}',
  });
  assert.equal(byCarol.status, 403);
  assert.match(
    ((await byCarol.json()) as { error: { message: string } }).error.message,
    /role admin or approver/,
  );
  assert.equal((await req(up.url, carol, '/api/v1/approvals')).status, 403);
  const bySelf = await req(up.url, ADMIN, `/api/v1/approvals/${id}`, {
    method: 'POST',
    body: '{"decision":"approve"}',
  });
  assert.equal(bySelf.status, 403);
  assert.equal(((await bySelf.json()) as { error: { rule: string } }).error.rule, 'self-approval');
  // Edited arguments are checked against the tool's schema.
  const badEdit = await req(up.url, bob, `/api/v1/approvals/${id}`, {
    method: 'POST',
    body: JSON.stringify({ decision: 'approve', arguments: { topic: 42 } }),
  });
  assert.equal(badEdit.status, 400);
  assert.match(
    ((await badEdit.json()) as { error: { message: string } }).error.message,
    /argument 'topic' must be a string/,
  );

  // bob approves with an edit, through the CLI; the stream goes on to the answer.
  const approve = await runCli(
    ['approvals', 'approve', id, '--arguments', '{"topic":"dogs"}', '--url', up.url, '--token', bob],
    env(home, model.baseURL),
  );
  assert.equal(approve.code, 0, approve.stderr);
  assert.match(approve.stdout, /approved .* as bob/);
  const rest = await readUntil(events, 'answer');
  assert.deepEqual(
    rest.map((e) => e.event),
    ['observation', 'answer'],
  );
  assert.match(String(rest[0]!.data['content']), /^Hey anonymous! Here's a/);
  assert.equal(rest[1]!.data['content'], `The tool said: ${String(rest[0]!.data['content'])}`);

  // A second decision: 409.
  const again = await req(up.url, bob, `/api/v1/approvals/${id}`, {
    method: 'POST',
    body: '{"decision":"deny"}',
  });
  assert.equal(again.status, 409);
  assert.match(
    ((await again.json()) as { error: { message: string } }).error.message,
    /already approved by bob/,
  );
  const done = (await (await req(up.url, ADMIN, `/api/v1/runs/${runId}`)).json()) as {
    run: { status: string; answer: string };
  };
  assert.equal(done.run.status, 'done');

  // A denial reaches the model as "denied by NAME: reason".
  const second = await ask(up.url, 'Another cat joke');
  const pending = await readUntil(second.events, 'approval');
  const secondId = String((pending[1]!.data['approval'] as { id: string }).id);
  const deny = await runCli(
    ['approvals', 'deny', secondId, '--reason', 'no more jokes today', '--url', up.url, '--token', bob],
    env(home, model.baseURL),
  );
  assert.equal(deny.code, 0, deny.stderr);
  const denied = await readUntil(second.events, 'answer');
  assert.deepEqual(
    denied.map((e) => e.event),
    ['observation', 'answer'],
  );
  assert.equal(denied[1]!.data['content'], 'The tool said: denied by bob: no more jokes today');
});

test('toolbus up: kill -9 while a run is paused; after a restart, approving it finishes the run with the same answer, and ask --attach shows it', async (t) => {
  const model = await startFakeOpenAIServer();
  t.after(() => model.close());
  scriptModel(model);
  const home = await tempHome(t);
  let up = await startUp(home, model.baseURL);
  await putCarefulJoke(up.url);
  const bob = await addPrincipal(home, model.baseURL, 'bob', ['--role', 'approver']);
  const { runId, events } = await ask(up.url, 'Tell me a cat joke');
  const first = await readUntil(events, 'approval');
  const id = String((first[1]!.data['approval'] as { id: string }).id);
  up.child.kill('SIGKILL');
  await new Promise((resolve) => up.child.once('exit', resolve));
  await events.return(undefined).catch(() => undefined);

  up = await startUp(home, model.baseURL);
  t.after(async () => void (await interrupt(up.child)));
  // Still there, still pending, across the restart.
  const list = await runCli(['approvals', 'list', '--url', up.url, '--token', bob], env(home, model.baseURL));
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, new RegExp(id));
  const approve = await runCli(
    ['approvals', 'approve', id, '--url', up.url, '--token', bob],
    env(home, model.baseURL),
  );
  assert.equal(approve.code, 0, approve.stderr);
  const attach = await runCli(
    ['ask', '--attach', runId, '--stream', '--url', up.url],
    env(home, model.baseURL),
  );
  assert.equal(attach.code, 0, attach.stderr);
  assert.match(attach.stdout, /thought: /);
  assert.match(attach.stdout, /observation: Hey anonymous! Here's a/);
  const answer = /^The tool said: [\s\S]*$/m.exec(attach.stdout)?.[0]?.trimEnd();
  assert.ok(answer, attach.stdout);
  const run = (await (await req(up.url, ADMIN, `/api/v1/runs/${runId}`)).json()) as {
    run: { status: string; answer: string };
  };
  assert.equal(run.run.status, 'done');
  assert.equal(run.run.answer, answer);
  assert.match(answer, /^The tool said: Hey anonymous! Here's a/);
});

test('two toolbus up replicas on a real nats-server: a run asked through one is approved through the other and finishes; a paused run whose replica is killed is resumed by the other', async (t) => {
  const nats = await startNatsServer({ jetstream: true });
  t.after(() => nats.stop());
  const model = await startFakeOpenAIServer();
  t.after(() => model.close());
  scriptModel(model);
  const homeA = await tempHome(t);
  const homeB = await tempHome(t);
  const where = ['--nats', nats.url];
  const a = await startUp(homeA, model.baseURL, where);
  t.after(() => stop(a));
  // Both run the joke service too: the survivor of a kill -9 still has it.
  const b = await startUp(homeB, model.baseURL, where);
  t.after(() => stop(b));
  await putCarefulJoke(a.url);
  const bob = await addPrincipal(homeB, model.baseURL, 'bob', ['--role', 'approver'], where);

  const { runId, events } = await ask(a.url, 'Tell me a cat joke');
  const first = await readUntil(events, 'approval');
  const id = String((first[1]!.data['approval'] as { id: string }).id);
  // The other replica sees the request (NATS KV) and takes the decision.
  const list = (await (await req(b.url, bob, '/api/v1/approvals')).json()) as { approvals: { id: string }[] };
  assert.deepEqual(
    list.approvals.map((x) => x.id),
    [id],
  );
  const decided = await req(b.url, bob, `/api/v1/approvals/${id}`, {
    method: 'POST',
    body: '{"decision":"approve","reason":"fine"}',
  });
  assert.equal(decided.status, 200, await decided.text());
  const rest = await readUntil(events, 'answer');
  assert.deepEqual(
    rest.map((e) => e.event),
    ['observation', 'answer'],
  );
  assert.match(String(rest[1]!.data['content']), /^The tool said: Hey anonymous! Here's a/);
  const run = (await (await req(b.url, bob, `/api/v1/runs/${runId}`)).json()) as { run: { status: string } };
  assert.equal(run.run.status, 'done');

  // A second run pauses on one replica (whichever took the question); kill -9 that one: approved
  // through the other, the other resumes the run and finishes it.
  const second = await ask(a.url, 'Another cat joke');
  const paused = await readUntil(second.events, 'approval');
  const secondId = String((paused[1]!.data['approval'] as { id: string }).id);
  const held = (await (await req(b.url, bob, `/api/v1/runs/${second.runId}`)).json()) as {
    run: { status: string; owner?: { pid: number } };
  };
  assert.equal(held.run.status, 'paused');
  const [owner, survivor] = held.run.owner?.pid === b.child.pid ? [b, a] : [a, b];
  assert.equal(held.run.owner?.pid, owner.child.pid, 'one of the two replicas holds the paused run');
  owner.child.kill('SIGKILL');
  await new Promise((resolve) => owner.child.once('exit', resolve));
  const approve = await req(survivor.url, bob, `/api/v1/approvals/${secondId}`, {
    method: 'POST',
    body: '{"decision":"approve"}',
  });
  assert.equal(approve.status, 200, await approve.text());
  const attach = await runCli(
    ['ask', '--attach', second.runId, '--url', survivor.url, '--token', bob],
    env(homeB, model.baseURL),
  );
  assert.equal(attach.code, 0, attach.stderr);
  assert.match(attach.stdout, /^The tool said: Hey anonymous! Here's a/m);
  const finished = (await (await req(survivor.url, bob, `/api/v1/runs/${second.runId}`)).json()) as {
    run: { status: string; owner?: unknown };
  };
  assert.equal(finished.run.status, 'done');
});
