/**
 * `toolbus approvals` and the approval side of `toolbus ask` against a fake gateway: a real HTTP server
 * on 127.0.0.1 that answers the routes of `/api/v1/approvals`, `/api/v1/runs/ID/events` and
 * `/api/v1/agent` as the spec says, and records what the CLI sent.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { runMain, type InProcessRun } from '../../../test/support/cli-in-process.js';

const TOKEN = 'test-token-0123';

interface Seen {
  method: string;
  url: string;
  accept: string | undefined;
  body: unknown;
}

/** What the fake gateway answers to one request; set per test. */
type Handler = (req: IncomingMessage, res: ServerResponse, body: unknown) => void;

let server: Server;
let url = '';
let seen: Seen[] = [];
let handler: Handler = (_req, res) =>
  sendJson(res, 404, { error: { code: 'not-found', message: 'no route' } });

before(async () => {
  server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      const body: unknown = text === '' ? undefined : JSON.parse(text);
      seen.push({ method: req.method ?? '', url: req.url ?? '', accept: req.headers.accept, body });
      if (req.headers.authorization !== `Bearer ${TOKEN}`) {
        sendJson(res, 401, { error: { code: 'unauthorized', message: 'missing or wrong token' } });
        return;
      }
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  seen = [];
});

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

/** Answers with an event stream of these events, a keep-alive comment first, then ends it. */
function sendEvents(
  res: ServerResponse,
  events: { type: string; [key: string]: unknown }[],
  headers: Record<string, string> = {},
): void {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', ...headers });
  res.write(': keep-alive\n\n');
  for (const event of events) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
  res.end();
}

type Run = InProcessRun;

/** Runs `toolbus <argv> --url URL --token TOKEN` in-process. */
function toolbus(...argv: string[]): Promise<Run> {
  return runMain([...argv, '--url', url, '--token', TOKEN]);
}

const ID = 'apr-0123456789abcdef01234567';

function approval(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: ID,
    runId: 'run-1',
    callId: 'call_1',
    tool: 'delete-file',
    arguments: { path: '/tmp/x' },
    user: 'alice',
    principal: 'admin',
    time: new Date(Date.now() - 5 * 60_000).toISOString(),
    expiresAt: new Date(Date.now() + 55 * 60_000).toISOString(),
    status: 'pending',
    ...fields,
  };
}

describe('toolbus approvals list', () => {
  test('prints the pending approvals as a table, long arguments cut', async () => {
    const long = { text: 'x'.repeat(200) };
    handler = (_req, res) =>
      sendJson(res, 200, {
        approvals: [
          approval(),
          approval({ id: 'apr-2', tool: 'write-file', arguments: long, user: undefined }),
        ],
      });
    const run = await toolbus('approvals', 'list');
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(
      seen.map((s) => `${s.method} ${s.url}`),
      ['GET /api/v1/approvals?status=pending'],
    );
    const lines = run.stdout.trimEnd().split('\n');
    assert.equal(lines.length, 3);
    assert.match(lines[0]!, /^ID\s+TOOL\s+RUN\s+PRINCIPAL\s+USER\s+AGE\s+STATUS\s+ARGUMENTS$/);
    assert.match(
      lines[1]!,
      new RegExp(`^${ID}\\s+delete-file\\s+run-1\\s+admin\\s+alice\\s+5m\\s+pending\\s+`),
    );
    assert.ok(lines[1]!.endsWith('{"path":"/tmp/x"}'), lines[1]);
    assert.match(lines[2]!, /^apr-2\s+write-file\s+run-1\s+admin\s+-\s+5m\s+pending\s+\{"text":"x+…$/);
    assert.equal(lines[2]!.slice(lines[2]!.indexOf('{"text"')).length, 60);
  });

  test('--all asks for every status and shows who decided; --json prints the array', async () => {
    const decided = approval({
      status: 'approved',
      decision: { by: 'bob', reason: 'ok', time: new Date().toISOString() },
    });
    handler = (_req, res) => sendJson(res, 200, { approvals: [decided] });
    const table = await toolbus('approvals', 'list', '--all');
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /approved by bob/);
    const json = await toolbus('approvals', 'list', '--status', 'approved', '--json');
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), [decided]);
    assert.deepEqual(
      seen.map((s) => s.url),
      ['/api/v1/approvals?status=all', '/api/v1/approvals?status=approved'],
    );
  });

  test('nothing pending: says so, exit 0; --json prints []', async () => {
    handler = (_req, res) => sendJson(res, 200, { approvals: [] });
    const run = await toolbus('approvals', 'list');
    assert.equal(run.code, 0);
    assert.equal(run.stdout, '');
    assert.equal(run.stderr, 'no pending approvals\n');
    const json = await toolbus('approvals', 'list', '--json');
    assert.deepEqual(JSON.parse(json.stdout), []);
  });

  test('a bad --status, or --all with --status, is a usage error', async () => {
    const bad = await toolbus('approvals', 'list', '--status', 'pendin');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /unknown status 'pendin'.*pending/);
    const both = await toolbus('approvals', 'list', '--all', '--status', 'denied');
    assert.equal(both.code, 2);
    assert.equal(seen.length, 0, 'nothing was sent');
  });
});

describe('toolbus approvals approve and deny', () => {
  test('approve sends the decision, reason and arguments; prints who approved', async () => {
    handler = (req, res, body) => {
      const b = body as { reason?: string; arguments?: Record<string, unknown> };
      sendJson(res, 200, {
        approval: approval({
          status: 'approved',
          decision: { by: 'bob', reason: b.reason, arguments: b.arguments, time: new Date().toISOString() },
        }),
      });
    };
    const run = await toolbus(
      'approvals',
      'approve',
      ID,
      '--reason',
      'checked with alice',
      '--arguments',
      '{"path":"/tmp/y"}',
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, `approved ${ID} (delete-file) as bob\n`);
    assert.deepEqual(seen, [
      {
        method: 'POST',
        url: `/api/v1/approvals/${ID}`,
        accept: 'application/json',
        body: { decision: 'approve', reason: 'checked with alice', arguments: { path: '/tmp/y' } },
      },
    ]);
  });

  test('deny sends only the decision and the reason', async () => {
    handler = (_req, res) =>
      sendJson(res, 200, {
        approval: approval({ status: 'denied', decision: { by: 'bob', time: new Date().toISOString() } }),
      });
    const run = await toolbus('approvals', 'deny', ID, '--reason', 'not on production');
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, `denied ${ID} (delete-file) as bob\n`);
    assert.deepEqual(seen[0]!.body, { decision: 'deny', reason: 'not on production' });
    const plain = await toolbus('approvals', 'deny', ID);
    assert.equal(plain.code, 0, plain.stderr);
    assert.deepEqual(seen[1]!.body, { decision: 'deny' });
  });

  test('--arguments that is not a JSON object is a usage error, before anything is sent', async () => {
    for (const text of ['{path:/tmp/y}', '[1,2]', '"text"', 'null']) {
      const run = await toolbus('approvals', 'approve', ID, '--arguments', text);
      assert.equal(run.code, 2, text);
      assert.match(
        run.stderr,
        /--arguments must be a JSON object.*e\.g\. --arguments '\{"path":"\/tmp\/x\.txt"\}'/,
      );
    }
    const deny = await toolbus('approvals', 'deny', ID, '--arguments', '{}');
    assert.equal(deny.code, 2);
    assert.match(deny.stderr, /--arguments is not an option of 'toolbus approvals deny'/);
    assert.equal(seen.length, 0);
  });

  test('a missing ID or action is a usage error', async () => {
    const noId = await toolbus('approvals', 'approve');
    assert.equal(noId.code, 2);
    assert.match(noId.stderr, /missing the approval's ID/);
    const noAction = await toolbus('approvals');
    assert.equal(noAction.code, 2);
    const typo = await toolbus('approvals', 'aprove', ID);
    assert.equal(typo.code, 2);
    assert.match(typo.stderr, /unknown action 'aprove'.*approve/);
    assert.equal(seen.length, 0);
  });

  test("the gateway's error (409: already decided) is printed, exit 1", async () => {
    handler = (_req, res) =>
      sendJson(res, 409, {
        error: { code: 'conflict', message: `approval ${ID} is already approved by bob` },
      });
    const run = await toolbus('approvals', 'deny', ID);
    assert.equal(run.code, 1);
    assert.equal(run.stdout, '');
    assert.equal(run.stderr, `toolbus approvals: approval ${ID} is already approved by bob\n`);
  });
});

describe('toolbus ask and approvals', () => {
  const pending = approval();
  const decide =
    `approval needed: delete-file({"path":"/tmp/x"}) (id ${ID}, run run-1)\n` +
    `  decide with: toolbus approvals approve ${ID}   or: toolbus approvals deny ${ID} --reason "..."\n`;

  test('--attach follows the events of a run and prints them as ask does', async () => {
    handler = (_req, res) =>
      sendEvents(res, [
        { type: 'thought', content: 'Deleting needs approval.' },
        { type: 'approval', content: 'delete-file waits for approval', approval: pending },
        { type: 'observation', content: 'deleted /tmp/x' },
        { type: 'answer', content: 'Done: /tmp/x is gone.' },
      ]);
    const run = await toolbus('ask', '--attach', 'run-1', '--stream');
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(seen, [
      { method: 'GET', url: '/api/v1/runs/run-1/events', accept: 'text/event-stream', body: undefined },
    ]);
    assert.equal(
      run.stdout,
      'thought: Deleting needs approval.\nobservation: deleted /tmp/x\nDone: /tmp/x is gone.\n',
    );
    assert.equal(run.stderr, decide);
    // Without --stream: the answer, and the approval all the same.
    const plain = await toolbus('ask', '--attach', 'run-1');
    assert.equal(plain.stdout, 'Done: /tmp/x is gone.\n');
    assert.equal(plain.stderr, decide);
  });

  test('--attach with a question, or an unknown run, is refused', async () => {
    const both = await toolbus('ask', 'hello', '--attach', 'run-1');
    assert.equal(both.code, 2);
    assert.match(both.stderr, /give a question or --attach RUN_ID, not both/);
    assert.equal(seen.length, 0);
    handler = (_req, res) => sendJson(res, 404, { error: { code: 'not-found', message: 'no run run-9' } });
    const missing = await toolbus('ask', '--attach', 'run-9');
    assert.equal(missing.code, 1);
    assert.equal(missing.stderr, 'toolbus ask: no run run-9\n');
  });

  test('plain ask prints the approval, and after an error how to follow the kept run', async () => {
    handler = (req, res) => {
      assert.equal(req.url, '/api/v1/agent');
      sendEvents(
        res,
        [
          { type: 'thought', content: 'Deleting needs approval.' },
          { type: 'approval', content: 'delete-file waits for approval', approval: pending },
          { type: 'error', content: 'the stream timed out waiting for a decision' },
        ],
        { 'toolbus-run': 'run-1' },
      );
    };
    const run = await toolbus('ask', 'delete /tmp/x', '--user', 'alice');
    assert.equal(run.code, 1);
    assert.deepEqual(seen[0], {
      method: 'POST',
      url: '/api/v1/agent',
      accept: 'text/event-stream',
      body: { question: 'delete /tmp/x', user: 'alice' },
    });
    assert.equal(run.stdout, '');
    assert.equal(
      run.stderr,
      decide +
        'toolbus ask: the stream timed out waiting for a decision\n' +
        '  the run is kept: toolbus ask --attach run-1\n',
    );
  });

  test('an error without an approval gets no hint; an answer ends the run cleanly', async () => {
    handler = (_req, res) =>
      sendEvents(res, [{ type: 'error', content: 'no model configured' }], { 'toolbus-run': 'run-2' });
    const failed = await toolbus('ask', 'hello');
    assert.equal(failed.code, 1);
    assert.equal(failed.stderr, 'toolbus ask: no model configured\n');
    handler = (_req, res) =>
      sendEvents(res, [{ type: 'answer', content: 'Hi.' }], { 'toolbus-run': 'run-3' });
    const answered = await toolbus('ask', 'hello');
    assert.equal(answered.code, 0, answered.stderr);
    assert.equal(answered.stdout, 'Hi.\n');
    assert.equal(answered.stderr, '');
  });

  test('a stream that ends before the answer, after an approval, is an error with the hint', async () => {
    handler = (_req, res) =>
      sendEvents(res, [{ type: 'approval', content: 'waits', approval: pending }], {
        'toolbus-run': 'run-1',
      });
    const run = await toolbus('ask', 'delete /tmp/x');
    assert.equal(run.code, 1);
    assert.equal(
      run.stderr,
      decide +
        'toolbus ask: the event stream ended before the answer\n' +
        '  the run is kept: toolbus ask --attach run-1\n',
    );
  });
});
