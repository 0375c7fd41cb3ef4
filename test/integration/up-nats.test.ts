/**
 * "Moving to NATS" from the README, as a test: `toolbus up --nats` in one process, the joke service in
 * another (`toolbus service --nats`), descriptors loaded with `toolbus config --nats`, and a call through
 * the gateway that crosses all three processes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer } from '../support/nats-server.js';
import { ROOT, interrupt, runCli, startCli } from '../support/cli.js';

test('toolbus up --nats + toolbus service --nats in another process + config over NATS KV', async (t) => {
  const nats = await startNatsServer({ jetstream: true });
  const home = await mkdtemp(join(tmpdir(), 'toolbus-up-nats-'));
  const script = join(home, 'model.json');
  await writeFile(
    script,
    JSON.stringify([{ calls: [{ name: 'tell-joke', arguments: { topic: 'cats' } }] }, 'That was a cat pun.']),
  );
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TOOLBUS_HOME: home,
    TOOLBUS_SCRIPTED_MODEL: script,
  };
  const children: ChildProcess[] = [];
  t.after(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await nats.stop();
    await rm(home, { recursive: true, force: true });
  });

  const up = await startCli(
    ['up', '--nats', nats.url, '--port', '0', '--no-examples'],
    env,
    /Press Ctrl-C to stop\./,
  );
  children.push(up.child);
  assert.match(up.output(), new RegExp(`bus\\s+NATS at ${nats.url.replace(/[.]/g, '\\.')}`));
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())?.[1];
  assert.ok(url, up.output());

  const service = await startCli(
    ['service', 'examples/joke-service/service.ts', '--nats', nats.url, '--replicas', '2'],
    env,
    /running \(2 replicas\)/,
  );
  children.push(service.child);

  for (const [item, file] of [
    ['tool-service/joke-service', 'joke-service.json'],
    ['tool/tell-joke', 'tell-joke.json'],
  ] as const) {
    const json = await readFile(join(ROOT, 'examples/joke-service', file), 'utf8');
    const put = await runCli(['config', 'put', item, '--nats', nats.url], env, json);
    assert.equal(put.code, 0, put.stderr);
  }

  // The registry in `up` sees the KV puts made by another process and builds the tool.
  const cliEnv = { ...env, TOOLBUS_URL: url };
  let listed = '';
  for (let i = 0; i < 100 && !listed.includes('tell-joke'); i++) {
    listed = (await runCli(['tools'], cliEnv)).stdout;
    if (!listed.includes('tell-joke')) await new Promise((r) => setTimeout(r, 100));
  }
  assert.match(listed, /tell-joke\s+topic: string/);

  const call = await runCli(['call', 'tell-joke', 'topic=programming', '--user', 'carol'], cliEnv);
  assert.equal(call.code, 0, call.stderr);
  assert.match(call.stdout, /Hey carol! Here's a pun for you/);

  // The agent service runs in `up`; `ask --nats` reaches it over the bus, and its tool call reaches
  // the service process with the asking user in the envelope.
  const ask = await runCli(
    ['ask', 'A cat joke please', '--nats', nats.url, '--stream', '--user', 'dave'],
    env,
  );
  assert.equal(ask.code, 0, ask.stderr);
  assert.match(ask.stdout, /observation: Hey dave! Here's a pun for you/);
  assert.match(ask.stdout, /That was a cat pun\./);

  assert.equal(await interrupt(service.child), 0, service.output());
  // With the service gone, a call fails fast with a typed error instead of hanging.
  const gone = await runCli(['call', 'tell-joke', 'topic=cats', '--json'], cliEnv);
  assert.equal(gone.code, 1);
  const result = JSON.parse(gone.stdout) as { isError: boolean; code: string };
  assert.deepEqual([result.isError, result.code], [true, 'unavailable']);

  assert.equal(await interrupt(up.child), 0, up.output());
});
