/**
 * "Write your own tool service" from the README, as a newcomer runs it in a checkout (no `npm run build`):
 * a module that imports `toolbus`, run with `toolbus service`, declared with two config items and called.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer } from '../support/nats-server.js';
import { readmeModule } from '../support/readme.js';
import { interrupt, runCli, startCli } from '../support/cli.js';

// The README's echo-service.ts ("Write your own tool service"), verbatim.
const ECHO_SERVICE = readmeModule('echo-service.ts');

test("toolbus service runs the README's echo-service.ts, which imports 'toolbus', from a checkout", async (t) => {
  const nats = await startNatsServer({ jetstream: true });
  const home = await mkdtemp(join(tmpdir(), 'toolbus-cli-service-'));
  const children: ChildProcess[] = [];
  t.after(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await nats.stop();
    await rm(home, { recursive: true, force: true });
  });
  const module = join(home, 'echo-service.ts');
  await writeFile(module, ECHO_SERVICE);
  // As in the checkout's root, where the README puts it: an ES module package.
  await writeFile(join(home, 'package.json'), '{"type":"module"}');
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home };

  const service = await startCli(['service', module, '--nats', nats.url], env, /running \(1 replica\)/);
  children.push(service.child);

  const items = [
    [
      'tool-service/echo',
      '{"id":"echo","request-queue":"non-persistent://tg/request/echo","response-queue":"non-persistent://tg/response/echo","config-params":[{"name":"times","required":false}]}',
    ],
    [
      'tool/echo',
      '{"type":"tool-service","name":"echo","description":"Repeat what the user says","service":"echo","times":2,"arguments":[{"name":"text","type":"string","description":"What to repeat"}]}',
    ],
  ] as const;
  for (const [item, json] of items) {
    const put = await runCli(['config', 'put', item, '--nats', nats.url], env, json);
    assert.equal(put.code, 0, put.stderr);
  }
  const call = await runCli(['call', 'echo', 'text=hi', '--user', 'bob', '--nats', nats.url], env);
  assert.equal(call.code, 0, call.stderr);
  assert.equal(call.stdout, 'bob said: hi bob said: hi\n');

  assert.equal(await interrupt(service.child), 0, service.output());
  // It says when it stops and when it has stopped, as toolbus up does.
  assert.match(
    service.output(),
    /^toolbus service: stopping \(calls in flight finish\)\.\.\.\ntoolbus service: stopped\n$/m,
  );
});

test('toolbus service without --nats explains both ways to run it; a missing module is named as given', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-cli-service-usage-'));
  t.after(() => rm(home, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home };
  const noNats = await runCli(['service', './echo-service.ts'], env);
  assert.equal(noNats.code, 2);
  assert.match(noNats.stderr, /needs a shared bus/);
  assert.match(noNats.stderr, /toolbus up --service \.\/echo-service\.ts/);
  assert.match(noNats.stderr, /toolbus service \.\/echo-service\.ts --nats nats:\/\/HOST:PORT/);

  const missing = await runCli(['service', './missing.ts', '--nats', 'nats://127.0.0.1:1'], env);
  assert.equal(missing.code, 1);
  assert.equal(missing.stderr, "toolbus service: cannot find the service module './missing.ts'\n");
});

const SHOUT_SERVICE = `import { DynamicToolService, type MessageBus } from 'toolbus';

export default (bus: MessageBus) =>
  new DynamicToolService({
    bus,
    topic: 'shout',
    announce: {
      tools: [{ name: 'shout', description: 'Shout', arguments: [{ name: 'text', type: 'string', description: 'What' }] }],
    },
    async invoke(_user, _config, args) {
      return String(args.text).toUpperCase();
    },
  });
`;

test('tools --nats and call --nats see a self-announcing service, whose tools arrive just after start', async (t) => {
  const nats = await startNatsServer({ jetstream: true });
  const home = await mkdtemp(join(tmpdir(), 'toolbus-cli-announce-'));
  const children: ChildProcess[] = [];
  t.after(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await nats.stop();
    await rm(home, { recursive: true, force: true });
  });
  const module = join(home, 'shout-service.ts');
  await writeFile(module, SHOUT_SERVICE);
  await writeFile(join(home, 'package.json'), '{"type":"module"}');
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home };
  const service = await startCli(['service', module, '--nats', nats.url], env, /running \(1 replica\)/);
  children.push(service.child);

  const tools = await runCli(['tools', '--nats', nats.url], env);
  assert.equal(tools.code, 0, tools.stderr);
  assert.match(tools.stdout, /^shout\s+text: string\s+Shout$/m);
  const call = await runCli(['call', 'shout', 'text=hi', '--nats', nats.url], env);
  assert.equal(call.code, 0, call.stderr);
  assert.equal(call.stdout, 'HI\n');

  assert.equal(await interrupt(service.child), 0, service.output());
});
