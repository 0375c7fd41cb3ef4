/**
 * The audit log of a real `toolbus up` (embedded: SQLite in its home): calls through `toolbus call`, the
 * HTTP API and MCP (both protocol eras), a request with a wrong token, then `toolbus audit` (through
 * the gateway and straight from the file) and `GET /api/v1/audit` show each with the right fields.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { AuditEntry } from '../../src/audit/index.js';
import { interrupt, runCli, startCli, type StartedCli } from '../support/cli.js';

const TOKEN = 'audit-test-token';
const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

function jsonLines(text: string): AuditEntry[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as AuditEntry);
}

test('toolbus up records every call and denied request; toolbus audit and GET /api/v1/audit read them', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-audit-'));
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TOOLBUS_HOME: home,
    TOOLBUS_TOKEN: TOKEN,
  };
  const started: StartedCli[] = [];
  t.after(async () => {
    for (const { child } of started) if (child.exitCode === null) child.kill('SIGKILL');
    await rm(home, { recursive: true, force: true });
  });
  const up = await startCli(['up', '--port', '0'], env, /Press Ctrl-C to stop\./);
  started.push(up);
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())?.[1];
  assert.ok(url, up.output());
  assert.match(
    up.output(),
    /audit\s+sqlite .*audit\.db \(entries kept 7d, at most 100 MB; arguments hashed\)/,
  );
  const auth = { authorization: `Bearer ${TOKEN}` };

  // 1. toolbus call (through the gateway, as the CLI).
  const called = await runCli(['call', 'tell-joke', 'topic=cats', '--user', 'alice', '--url', url], env);
  assert.equal(called.code, 0, called.stderr);

  // 2. The HTTP API: a success with the body as sent, and a failure of the tool's arguments.
  const body = '{ "topic": "dogs" }';
  const invoke = async (text: string, user: string): Promise<{ isError: boolean; code?: string }> => {
    const r = await fetch(`${url}/api/v1/tools/tell-joke/invoke?user=${user}`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: text,
    });
    assert.equal(r.status, 200);
    return (await r.json()) as { isError: boolean; code?: string };
  };
  assert.equal((await invoke(body, 'bob')).isError, false);
  assert.equal((await invoke('{"topic":1}', 'bob')).code, 'invalid-arguments');

  // 3. A wrong token.
  const denied = await fetch(`${url}/api/v1/tools`, { headers: { authorization: 'Bearer wrong' } });
  assert.equal(denied.status, 401);
  await denied.body?.cancel();

  // 4. MCP, in both protocol eras (a 2025 session and 2026-07-28 stateless requests).
  for (const mode of ['legacy', 'auto'] as const) {
    const client = new Client({ name: 'audit-test', version: '1' }, { versionNegotiation: { mode } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: auth } }),
    );
    const result = await client.callTool({ name: 'tell-joke', arguments: { topic: mode } });
    assert.notEqual(result.isError, true);
    await client.close();
  }

  // toolbus audit --json, through the gateway.
  const read = await runCli(['audit', '--json', '--url', url], env);
  assert.equal(read.code, 0, read.stderr);
  const entries = jsonLines(read.stdout);
  const calls = entries.filter((e) => e.kind === 'call');
  assert.equal(calls.length, 5, read.stdout);
  for (const e of calls) {
    assert.equal(e.tool, 'tell-joke');
    assert.ok(e.durationMs >= 0, `duration ${e.durationMs}`);
    assert.match(e.argsSha256 ?? '', /^[0-9a-f]{64}$/);
    assert.equal(e.args, undefined, 'arguments are kept only with --audit-args');
    assert.ok(e.callId);
    assert.ok(Date.parse(e.time) > Date.now() - 120_000);
  }
  const [cli, http, invalid, ...mcp] = calls;
  assert.equal(cli!.caller, 'cli:admin@127.0.0.1');
  assert.equal(cli!.user, 'alice');
  assert.equal(cli!.outcome, 'ok');
  assert.equal(cli!.argsSha256, sha256('{"topic":"cats"}'));
  assert.equal(cli!.argsBytes, 16);
  assert.equal(http!.caller, 'http:admin@127.0.0.1');
  assert.equal(http!.user, 'bob');
  assert.equal(http!.argsSha256, sha256(body), 'the hash is of the argument text as sent');
  assert.equal(http!.argsBytes, Buffer.byteLength(body));
  assert.equal(invalid!.outcome, 'invalid-arguments');
  assert.equal(invalid!.argsSha256, sha256('{"topic":1}'));
  assert.deepEqual(
    mcp.map((e) => [e.caller, e.outcome]),
    [
      ['mcp:admin@127.0.0.1', 'ok'],
      ['mcp:admin@127.0.0.1', 'ok'],
    ],
  );
  const refused = entries.find((e) => e.kind === 'denied');
  assert.ok(refused, read.stdout);
  assert.equal(refused.outcome, 'unauthorized');
  assert.equal(refused.tool, null);
  assert.equal(refused.caller, 'http:unauthenticated@127.0.0.1');
  assert.deepEqual(refused.request, { method: 'GET', path: '/api/v1/tools', status: 401 });

  // GET /api/v1/audit with filters; bad values are a 400 that says what is accepted.
  const api = async (query: string, headers: Record<string, string> = auth): Promise<Response> =>
    fetch(`${url}/api/v1/audit${query}`, { headers });
  const bobs = await api('?tool=tell-joke&user=bob&since=1h&limit=1');
  assert.equal(bobs.status, 200);
  const found = ((await bobs.json()) as { entries: AuditEntry[] }).entries;
  assert.deepEqual(
    found.map((e) => [e.user, e.outcome]),
    [['bob', 'invalid-arguments']],
  );
  for (const [query, message] of [
    ['?since=yesterday', /since must be an age such as 30s/],
    ['?limit=0', /limit must be a whole number from 1 to 10000/],
    ['?tol=x', /unknown query parameter 'tol'/],
  ] as const) {
    const r = await api(query);
    assert.equal(r.status, 400, query);
    const error = ((await r.json()) as { error: { code: string; message: string } }).error;
    assert.equal(error.code, 'invalid-request');
    assert.match(error.message, message);
  }
  const anonymous = await api('', {});
  assert.equal(anonymous.status, 401, 'the audit route needs the token');
  await anonymous.body?.cancel();

  // Human output: a header and one aligned line per entry.
  const human = await runCli(['audit', '--tool', 'tell-joke', '--limit', '2', '--url', url], env);
  assert.equal(human.code, 0, human.stderr);
  const lines = human.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 3, human.stdout);
  assert.match(lines[0]!, /^TIME\s+OUTCOME\s+DURATION\s+TOOL\s+USER\s+CALLER\s+CALL ID\s+ARGS$/);
  const toolColumn = lines[0]!.indexOf('TOOL');
  for (const line of lines.slice(1)) assert.equal(line.indexOf('tell-joke'), toolColumn, human.stdout);
  assert.match(lines[1]!, /mcp:admin@127\.0\.0\.1/);

  const bad = await runCli(['audit', '--since', 'soon', '--url', url], env);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--since must be an age such as 30s/);

  // After a stop, the file still has every entry (the last ones written at close).
  assert.equal(await interrupt(up.child), 0, up.output());
  const local = await runCli(['audit', '--local', '--json', '--limit', '1000'], env);
  assert.equal(local.code, 0, local.stderr);
  const kept = jsonLines(local.stdout);
  assert.equal(kept.filter((e) => e.kind === 'call').length, 5);
  assert.equal(kept.filter((e) => e.kind === 'denied').length, 2, 'the anonymous GET /api/v1/audit too');
});
