/**
 * `toolbus tools` through a running `toolbus up` says which config items the registry skipped and why,
 * as it does with --store, instead of leaving them silently out of the list.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { interrupt, runCli, startCli } from '../support/cli.js';
import { STDIO_SERVER } from '../fixtures/mcp-spawn.js';

test('toolbus tools through the gateway warns about config items the registry skipped', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-cli-tools-'));
  const children: ChildProcess[] = [];
  t.after(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await rm(home, { recursive: true, force: true });
  });
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home };
  const up = await startCli(['up', '--port', '0', '--no-examples'], env, /Press Ctrl-C to stop\./);
  children.push(up.child);
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())?.[1];
  assert.ok(url, up.output());
  // No tools yet and no examples: the banner does not suggest calling a joke tool that is not there.
  assert.doesNotMatch(up.output(), /toolbus call tell-joke/);
  assert.match(up.output(), /npx toolbus config put tool\/<name> < tool\.json/);

  const bad = '{"type":"tool-service","name":"bad","description":"x","service":"nope","arguments":[]}';
  const put = await runCli(['config', 'put', 'tool/bad'], env, bad);
  assert.equal(put.code, 0, put.stderr);

  // The registry applies the change asynchronously: wait (bounded) until it reports the item.
  for (let i = 0; i < 100; i++) {
    const token = (await readFile(join(home, 'token'), 'utf8')).trim();
    const health = (await (
      await fetch(`${url}/api/v1/health`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as { problems: { key: string }[] };
    if (health.problems.some((p) => p.key === 'tool/bad')) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const tools = await runCli(['tools', '--url', url], env);
  assert.equal(tools.code, 0, tools.stderr);
  assert.match(tools.stderr, /warning: tool\/bad: .*unknown tool service 'nope'/);
  assert.doesNotMatch(tools.stdout, /\bbad\b/);

  // An unknown tool is a result with isError, as with --store: --json prints it, exit 1.
  const unknown = await runCli(['call', 'bad', '--json', '--url', url], env);
  assert.equal(unknown.code, 1, unknown.stderr);
  const result = JSON.parse(unknown.stdout) as { isError: boolean; code: string; content: string };
  assert.deepEqual([result.isError, result.code], [true, 'unknown-tool']);
  assert.match(result.content, /unknown tool 'bad' \(its config item tool\/bad was skipped/);
  const plain = await runCli(['call', 'bad', '--url', url], env);
  assert.equal(plain.code, 1);
  assert.match(plain.stderr, /^error \(unknown-tool\): unknown tool 'bad'/);

  assert.equal(await interrupt(up.child), 0, up.output());
});

test('toolbus tools run right after mcp import lists the imported tools', { timeout: 90_000 }, async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-cli-mcp-import-'));
  const children: ChildProcess[] = [];
  t.after(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await rm(home, { recursive: true, force: true });
  });
  const allow = `"${process.execPath}" --import tsx "${STDIO_SERVER}"`;
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TOOLBUS_HOME: home,
    TOOLBUS_ALLOW_COMMANDS: allow,
  };
  const up = await startCli(['up', '--port', '0', '--no-examples'], env, /Press Ctrl-C to stop\./);
  children.push(up.child);
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())?.[1];
  assert.ok(url, up.output());
  const server = JSON.stringify({ command: process.execPath, args: ['--import', 'tsx', STDIO_SERVER] });
  const put = await runCli(['config', 'put', 'mcp/fixture'], env, server);
  assert.equal(put.code, 0, put.stderr);
  const imported = await runCli(['mcp', 'import', 'fixture', '--include', 'echo,add'], env);
  assert.equal(imported.code, 0, imported.stderr);
  assert.match(imported.stdout, /2 of 2 tools written/);
  // No waiting: the listing asks the registry to catch up with the store (MCP session included).
  const tools = await runCli(['tools', '--url', url], env);
  assert.equal(tools.code, 0, tools.stderr);
  assert.match(tools.stdout, /^echo\b/m);
  assert.match(tools.stdout, /^add\b/m);
  assert.equal(await interrupt(up.child), 0, up.output());
});
