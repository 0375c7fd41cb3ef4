/**
 * The distributed audit log: `toolbus up --nats` on a real nats-server with JetStream creates the
 * TOOLBUS_AUDIT stream with the limits its flags give, appends every call and denied request, and
 * `toolbus audit --nats` (another process, no gateway) reads them back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import type { AuditEntry } from '../../src/audit/index.js';
import { startNatsServer } from '../support/nats-server.js';
import { interrupt, runCli, startCli, type StartedCli } from '../support/cli.js';
import { waitFor } from '../fixtures/mcp-spawn.js';

const TOKEN = 'audit-nats-token';

function jsonLines(text: string): AuditEntry[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as AuditEntry);
}

test('toolbus up --nats keeps the audit log in a JetStream stream with its limits; toolbus audit --nats reads it', async (t) => {
  const nats = await startNatsServer({ jetstream: true });
  const home = await mkdtemp(join(tmpdir(), 'toolbus-audit-nats-'));
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TOOLBUS_HOME: home,
    TOOLBUS_TOKEN: TOKEN,
  };
  const started: StartedCli[] = [];
  const nc = await connect({ servers: nats.url });
  t.after(async () => {
    for (const { child } of started) if (child.exitCode === null) child.kill('SIGKILL');
    await nc.close();
    await nats.stop();
    await rm(home, { recursive: true, force: true });
  });

  // Before any toolbus up --nats: there is no stream to read, and the reader says so.
  const early = await runCli(['audit', '--nats', nats.url], env);
  assert.equal(early.code, 1);
  assert.match(early.stderr, /there is no audit stream 'TOOLBUS_AUDIT' on this NATS server/);

  const up = await startCli(
    ['up', '--nats', nats.url, '--port', '0', '--audit-max-age', '2d', '--audit-max-mb', '5'],
    env,
    /Press Ctrl-C to stop\./,
  );
  started.push(up);
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())?.[1];
  assert.ok(url, up.output());
  assert.match(up.output(), /audit\s+JetStream stream TOOLBUS_AUDIT \(entries kept 2d, at most 5 MB/);

  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info('TOOLBUS_AUDIT');
  assert.deepEqual(info.config.subjects, ['toolbus.audit.>']);
  assert.equal(info.config.max_age, 2 * 24 * 3600 * 1e9);
  assert.equal(info.config.max_bytes, 5 * 1024 * 1024);
  assert.equal(info.config.discard, 'old');
  assert.equal(info.config.storage, 'file');

  const called = await runCli(['call', 'tell-joke', 'topic=cats', '--user', 'alice', '--url', url], env);
  assert.equal(called.code, 0, called.stderr);
  const failed = await runCli(['call', 'tell-joke', 'topic:=7', '--url', url], env);
  assert.equal(failed.code, 1);
  const denied = await fetch(`${url}/api/v1/tools`, { headers: { authorization: 'Bearer wrong' } });
  assert.equal(denied.status, 401);
  await denied.body?.cancel();

  // Entries are published in batches a moment after the calls.
  assert.ok(
    await waitFor(async () => (await jsm.streams.info('TOOLBUS_AUDIT')).state.messages >= 3, 10_000, 100),
    'the stream never got the three entries',
  );
  const subjects = (await jsm.streams.info('TOOLBUS_AUDIT', { subjects_filter: '>' })).state.subjects;
  assert.deepEqual(subjects, { 'toolbus.audit.call.tell-joke': 2, 'toolbus.audit.denied': 1 });

  const read = await runCli(['audit', '--nats', nats.url, '--json'], env);
  assert.equal(read.code, 0, read.stderr);
  const entries = jsonLines(read.stdout);
  assert.deepEqual(
    entries.map((e) => [e.kind, e.tool, e.outcome]),
    [
      ['call', 'tell-joke', 'ok'],
      ['call', 'tell-joke', 'invalid-arguments'],
      ['denied', null, 'unauthorized'],
    ],
  );
  const [ok] = entries;
  assert.equal(ok!.caller, 'cli:admin@127.0.0.1');
  assert.equal(ok!.user, 'alice');
  assert.equal(ok!.argsSha256, createHash('sha256').update('{"topic":"cats"}').digest('hex'));
  assert.ok(ok!.durationMs >= 0);

  const filtered = await runCli(
    ['audit', '--nats', nats.url, '--json', '--tool', 'tell-joke', '--user', 'alice', '--since', '1h'],
    env,
  );
  assert.equal(filtered.code, 0, filtered.stderr);
  assert.deepEqual(
    jsonLines(filtered.stdout).map((e) => e.callId),
    [ok!.callId],
  );
  const latest = await runCli(['audit', '--nats', nats.url, '--json', '--limit', '1'], env);
  assert.deepEqual(
    jsonLines(latest.stdout).map((e) => e.kind),
    ['denied'],
  );

  // The gateway reads the same stream.
  const api = await fetch(`${url}/api/v1/audit?tool=tell-joke`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  assert.equal(((await api.json()) as { entries: AuditEntry[] }).entries.length, 2);

  assert.equal(await interrupt(up.child), 0, up.output());
});
