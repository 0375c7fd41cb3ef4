/**
 * The README quickstart as a test: `toolbus up` as a child process on a free port, used through the CLI
 * and the HTTP API, then stopped with Ctrl-C (SIGINT), checking that it exits cleanly.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { ROOT, interrupt, runCli, startCli } from '../support/cli.js';

/** Starts `toolbus up` on a free port and resolves with its URL once the banner is printed. */
async function startUp(env: NodeJS.ProcessEnv) {
  const up = await startCli(['up', '--port', '0'], env, /Press Ctrl-C to stop\./);
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())?.[1];
  if (!url) throw new Error(`no gateway URL in the banner:\n${up.output()}`);
  return { ...up, url };
}

test('README quickstart: up, tools, call, ask (scripted model), HTTP API, clean Ctrl-C', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-quickstart-'));
  const script = join(home, 'model.json');
  await writeFile(
    script,
    JSON.stringify([
      { calls: [{ name: 'tell-dad-joke', arguments: { topic: 'dogs' } }], thought: 'A dad joke tool fits.' },
      'Here is your dad joke about dogs.',
    ]),
  );
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TOOLBUS_HOME: home,
    TOOLBUS_SCRIPTED_MODEL: script,
  };
  const up = await startUp(env);
  t.after(async () => {
    if (up.child.exitCode === null) up.child.kill('SIGKILL');
    await rm(home, { recursive: true, force: true });
  });
  const banner = up.output();
  assert.match(banner, /tools\s+.*tell-joke/);
  assert.match(banner, /Try next:/);
  assert.match(banner, /toolbus call tell-joke topic=cats/);

  const cliEnv = { ...env, TOOLBUS_URL: up.url };
  const tools = await runCli(['tools'], cliEnv);
  assert.equal(tools.code, 0, tools.stderr);
  assert.match(tools.stdout, /^NAME\s+ARGUMENTS\s+DESCRIPTION/m);
  assert.match(tools.stdout, /tell-joke\s+topic: string/);
  assert.match(tools.stdout, /tell-dad-joke/);

  const call = await runCli(['call', 'tell-joke', 'topic=cats', '--user', 'alice'], cliEnv);
  assert.equal(call.code, 0, call.stderr);
  assert.match(call.stdout, /Hey alice! Here's a pun/);

  const unknown = await runCli(['call', 'no-such-tool'], cliEnv);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /unknown tool 'no-such-tool'; available tools: .*tell-joke/);

  const usage = await runCli(['call'], cliEnv);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /toolbus call --help/);

  const ask = await runCli(['ask', 'Tell me a dad joke about dogs', '--stream', '--user', 'bob'], cliEnv);
  assert.equal(ask.code, 0, ask.stderr);
  assert.match(ask.stdout, /thought: A dad joke tool fits\./);
  assert.match(ask.stdout, /observation: Hey bob! Here's a dad joke/);
  assert.match(ask.stdout, /Here is your dad joke about dogs\./);
  // Without --stream (asked over the event stream too, so long runs survive): the answer only.
  const plain = await runCli(['ask', 'Tell me a dad joke about dogs'], cliEnv);
  assert.equal(plain.code, 0, plain.stderr);
  assert.equal(plain.stdout, 'Here is your dad joke about dogs.\n');

  // The README's curl line: the token from the home's token file, JSON in.
  const token = (await readFile(join(home, 'token'), 'utf8')).trim();
  const authorization = `Bearer ${token}`;
  const health = (await (await fetch(`${up.url}/api/v1/health`, { headers: { authorization } })).json()) as {
    status: string;
    agent: boolean;
  };
  assert.equal(health.status, 'ok');
  assert.equal(health.agent, true);
  const invoked = (await (
    await fetch(`${up.url}/api/v1/tools/tell-dad-joke/invoke`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: '{"topic":"cats"}',
    })
  ).json()) as { content: string; isError: boolean };
  assert.equal(invoked.isError, false);
  assert.match(invoked.content, /dad joke/);

  assert.equal(await interrupt(up.child), 0, up.output());
  assert.match(up.output(), /toolbus: stopped/);
});

test('without a model, up still serves tools and ask explains how to configure one', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-nomodel-'));
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home };
  const up = await startUp(env);
  t.after(async () => {
    if (up.child.exitCode === null) up.child.kill('SIGKILL');
    await rm(home, { recursive: true, force: true });
  });
  assert.match(up.output(), /agent\s+off: no model configured/);
  const cliEnv = { ...env, TOOLBUS_URL: up.url };
  const call = await runCli(['call', 'tell-joke', '{"topic":"programming"}'], cliEnv);
  assert.equal(call.code, 0, call.stderr);
  const port = new URL(up.url).port;
  const second = await runCli(['up', '--port', port, '--no-examples'], env);
  assert.equal(second.code, 1);
  assert.match(second.stderr, /already in use: is another 'toolbus up' running\?.*--port/);
  const ask = await runCli(['ask', 'hello'], cliEnv);
  assert.equal(ask.code, 1);
  assert.match(ask.stderr, /OPENAI_API_KEY/);
  assert.doesNotMatch(ask.stderr, /\n\s+at /, 'no stack trace');
  assert.equal(await interrupt(up.child), 0);
});

test('the CLI answers --help for every command and refuses unknown commands with exit 2', async () => {
  const env = { PATH: process.env.PATH, HOME: process.env.HOME };
  const help = await runCli(['--help'], env);
  assert.equal(help.code, 0);
  for (const name of ['up', 'tools', 'call', 'ask', 'config', 'service', 'mcp'])
    assert.match(help.stdout, new RegExp(`\\b${name}\\b`));
  const upHelp = await runCli(['up', '--help'], env);
  assert.equal(upHelp.code, 0);
  assert.match(upHelp.stdout, /--port PORT/);
  const unknown = await runCli(['frobnicate'], env);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown command 'frobnicate'/);
  const unreachable = await runCli(['tools', '--url', 'http://127.0.0.1:9'], env);
  assert.equal(unreachable.code, 1);
  assert.match(unreachable.stderr, /cannot reach toolbus at http:\/\/127\.0\.0\.1:9.*toolbus up/);
});

test('bin/toolbus.js works from any folder and passes SIGTERM on, so the server stops and frees its port', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-bin-'));
  t.after(() => rm(home, { recursive: true, force: true }));
  const bin = join(ROOT, 'bin/toolbus.js');
  const child = spawn(process.execPath, [bin, 'up', '--port', '0', '--no-examples'], {
    cwd: home,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home },
  });
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready:\n${out}`)), 60_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('Press Ctrl-C to stop.')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => reject(new Error(`exited early with ${code}:\n${out}`)));
  });
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1];
  assert.ok(url, out);
  child.kill('SIGTERM');
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.equal(code, 0, out);
  assert.match(out, /toolbus: stopped/);
  await assert.rejects(fetch(`${url}/api/v1/health`), 'the port is free once the wrapper exits');
});
