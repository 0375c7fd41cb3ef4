/**
 * The log of `toolbus up` and `toolbus service`: JSON lines on a stdout that is not a terminal, one
 * `event` per line: start and stop, the bus's disconnect and reconnect with the outage's length,
 * registry changes, failed service calls and denied requests; `--log-level` filters them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startNatsServer } from '../support/nats-server.js';
import { interrupt, runCli, startCli } from '../support/cli.js';

interface LogLine {
  level: number;
  event?: string;
  msg: string;
  [field: string]: unknown;
}

/** The JSON log lines in a process's output (the banner lines around them are plain text). */
function logLines(output: string): LogLine[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

async function until(check: () => boolean, ms: number, what: string, output: () => string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms; output:\n${output()}`);
    await sleep(50);
  }
}

test('toolbus up --nats logs start, denied requests, registry changes, the outage with its length, and stop', async (t) => {
  const nats = await startNatsServer({ jetstream: true });
  const home = await mkdtemp(join(tmpdir(), 'toolbus-logs-'));
  const children: ChildProcess[] = [];
  t.after(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await nats.stop();
    await rm(home, { recursive: true, force: true });
  });
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home };
  const up = await startCli(
    ['up', '--nats', nats.url, '--port', '0', '--no-examples'],
    env,
    /"event":"start"/,
  );
  children.push(up.child);
  const logs = (): LogLine[] => logLines(up.output());
  const start = logs().find((l) => l.event === 'start')!;
  assert.equal(start.level, 30, 'info');
  assert.match(String(start.gateway), /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.equal(start.bus, `NATS at ${nats.url}`);
  const url = String(start.gateway);

  const denied = await fetch(`${url}/api/v1/tools`, { headers: { authorization: 'Bearer wrong' } });
  assert.equal(denied.status, 401);
  await until(
    () => logs().some((l) => l.event === 'request.denied'),
    5_000,
    'the denied request is logged',
    up.output,
  );
  const deniedLine = logs().find((l) => l.event === 'request.denied')!;
  assert.equal(deniedLine.status, 401);
  assert.equal(deniedLine.path, '/api/v1/tools');
  assert.doesNotMatch(up.output(), /wrong/, 'the token sent is not logged');

  const put = async (name: string, value: unknown): Promise<void> => {
    const run = await runCli(
      ['config', 'put', name, '--nats', nats.url, '--force'],
      env,
      JSON.stringify(value),
    );
    assert.equal(run.code, 0, run.stderr);
  };
  await put('tool-service/echo', {
    id: 'echo',
    'request-queue': 'non-persistent://tg/request/echo',
    'response-queue': 'non-persistent://tg/response/echo',
  });
  await put('tool/echo', {
    type: 'tool-service',
    name: 'echo',
    description: 'Repeat a text.',
    service: 'echo',
    arguments: [{ name: 'text', type: 'string', description: 'what to repeat' }],
  });
  await until(
    () => logs().some((l) => l.event === 'registry.changed' && (l.added as string[]).includes('echo')),
    15_000,
    'the registry change is logged',
    up.output,
  );
  await put('tool/broken', {
    type: 'tool-service',
    name: 'broken',
    description: 'No such service.',
    service: 'nope',
  });
  await until(
    () => logs().some((l) => l.event === 'registry.problem' && l.key === 'tool/broken'),
    15_000,
    'the registry problem is logged',
    up.output,
  );

  await nats.restart({ kill: true, downMs: 1_500 });
  await until(
    () => logs().some((l) => l.event === 'bus.reconnected'),
    20_000,
    'the reconnect is logged',
    up.output,
  );
  const disconnected = logs().find((l) => l.event === 'bus.disconnected')!;
  assert.equal(disconnected.level, 40, 'warn');
  const reconnected = logs().find((l) => l.event === 'bus.reconnected')!;
  assert.ok(Number(reconnected.outageMs) >= 1_000, `outage ${String(reconnected.outageMs)} ms`);
  assert.match(reconnected.msg, /reconnected to NATS after \d+\.\d s/);

  assert.equal(await interrupt(up.child), 0);
  const events = logs().map((l) => l.event);
  assert.ok(events.includes('stop'), events.join(', '));
});

test('--log-level warn keeps only warnings and errors; a bad level is a usage error', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-logs-level-'));
  t.after(() => rm(home, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home };
  const up = await startCli(
    ['up', '--port', '0', '--no-examples', '--log-level', 'warn'],
    env,
    /Press Ctrl-C to stop\./,
  );
  t.after(() => void (up.child.exitCode === null && up.child.kill('SIGKILL')));
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())![1]!;
  await fetch(`${url}/api/v1/tools`);
  await until(
    () => logLines(up.output()).some((l) => l.event === 'request.denied'),
    5_000,
    'denied',
    up.output,
  );
  assert.equal(await interrupt(up.child), 0);
  assert.ok(
    logLines(up.output()).every((l) => l.level >= 40),
    up.output(),
  );

  const bad = await runCli(['up', '--log-level', 'loud'], env);
  assert.equal(bad.code, 2);
  assert.match(
    bad.stderr,
    /--log-level 'loud' is not a log level: use one of trace, debug, info, warn, error, fatal, silent/,
  );
});
