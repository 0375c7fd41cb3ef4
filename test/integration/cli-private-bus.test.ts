/**
 * `toolbus call --store` and `toolbus mcp serve` without --nats open their own in-memory bus, where the
 * tool services of a running `toolbus up` cannot answer: the user is told why and what to do.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, runCli } from '../support/cli.js';

test('call --store on a tool service says the private in-memory bus is why it is unavailable, and the fix', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-private-bus-'));
  t.after(() => rm(home, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home };
  const store = join(home, 'config.db');
  for (const [item, file] of [
    ['tool-service/joke-service', 'joke-service.json'],
    ['tool/tell-joke', 'tell-joke.json'],
  ] as const) {
    const json = await readFile(join(ROOT, 'examples/joke-service', file), 'utf8');
    const put = await runCli(['config', 'put', item, '--store', store], env, json);
    assert.equal(put.code, 0, put.stderr);
  }
  const call = await runCli(['call', 'tell-joke', 'topic=cats', '--store', store], env);
  assert.equal(call.code, 1);
  assert.match(call.stderr, /error \(unavailable\)/);
  assert.match(call.stderr, /note: without --nats this command has its own in-memory bus/);
  assert.match(call.stderr, /leave out --store/);

  const serve = await runCli(['mcp', 'serve', '--store', store], env, '');
  assert.equal(serve.code, 0, serve.stderr);
  assert.match(serve.stderr, /note: without --nats .*\/mcp endpoint/);
});
