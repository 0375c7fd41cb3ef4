/**
 * The README quickstart as a test: `toolbus up` as a child process on a free port, used through the CLI
 * and the HTTP API, then stopped with Ctrl-C (SIGINT), checking that it exits cleanly.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'src/cli/main.ts');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], { cwd: ROOT, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Starts `toolbus up` and resolves with its URL once the banner is printed. */
function startUp(
  env: NodeJS.ProcessEnv,
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'up', '--port', '0'], { cwd: ROOT, env });
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`toolbus up did not start within 60 s; output:\n${out}`));
    }, 60_000);
    const onData = (d: Buffer): void => {
      out += d.toString();
      const match = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (match && out.includes('Press Ctrl-C to stop.')) {
        clearTimeout(timer);
        resolve({ child, url: match[1]!, output: () => out });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`toolbus up exited early with ${code}:\n${out}`));
    });
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
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

  const health = (await (await fetch(`${up.url}/api/v1/health`)).json()) as {
    status: string;
    agent: boolean;
  };
  assert.equal(health.status, 'ok');
  assert.equal(health.agent, true);
  const invoked = (await (
    await fetch(`${up.url}/api/v1/tools/tell-dad-joke/invoke`, { method: 'POST', body: '{"topic":"cats"}' })
  ).json()) as { content: string; isError: boolean };
  assert.equal(invoked.isError, false);
  assert.match(invoked.content, /dad joke/);

  up.child.kill('SIGINT');
  const code = await exited(up.child);
  assert.equal(code, 0, up.output());
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
  up.child.kill('SIGINT');
  assert.equal(await exited(up.child), 0);
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
