/**
 * `toolbus ask --nats` with no agent service on the bus: the no-responders signal becomes one line
 * saying how to start an agent, exit 1, not a timeout after ten minutes or a stack trace.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startNatsServer } from '../support/nats-server.js';
import { runCli } from '../support/cli.js';

test('ask --nats with no agent listening says how to start one and exits 1', async (t) => {
  const nats = await startNatsServer();
  t.after(() => nats.stop());
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME };
  const started = Date.now();
  const ask = await runCli(['ask', 'anyone there?', '--nats', nats.url], env);
  assert.equal(ask.code, 1, ask.stderr);
  assert.equal(ask.stdout, '');
  assert.match(
    ask.stderr,
    new RegExp(
      `^toolbus ask: no agent is listening on ${nats.url}\\. Start one .*toolbus up --nats ${nats.url}\\n$`,
    ),
  );
  assert.ok(Date.now() - started < 30_000, 'answered by the no-responders signal, not a timeout');
});
