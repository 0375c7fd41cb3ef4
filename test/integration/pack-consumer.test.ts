/**
 * "Use it in your project" from the README: `npm pack` makes a tarball that installs from the npm cache
 * into a fresh consumer (`"type": "module"`, with the peers it picks), where the README's "A tool in
 * code" runs and a tool service module answers `toolbus call` through `toolbus up`, all on NATS.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../support/cli.js';
import { startNatsServer } from '../support/nats-server.js';
import {
  consumerEnv,
  exec,
  installConsumer,
  packToolbus,
  rootPackageJson,
  startProcess,
  stopProcess,
} from '../support/pack.js';

/** The first ```ts block of the README section `## <heading>`, as a reader copies it. */
function readmeSnippet(readme: string, heading: string): string {
  const start = readme.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `README.md has no section '## ${heading}'`);
  const section = readme.slice(start + 1).split('\n## ')[0]!;
  const block = /^```ts\n([\s\S]*?)^```$/m.exec(section);
  assert.ok(block, `README.md's section '## ${heading}' has no \`\`\`ts block`);
  return block[1]!;
}

const pkg = await rootPackageJson();
const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
let dir: string;
let consumer: string;

before(
  async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolbus-pack-'));
    const tarball = await packToolbus(dir);
    consumer = join(dir, 'consumer');
    const dev = pkg.devDependencies;
    // The consumer's picks: zod for its own schemas, tsx to run TypeScript, and the toolbus/nats peers.
    await installConsumer(consumer, [
      tarball,
      `zod@${pkg.dependencies['zod']}`,
      `tsx@${dev['tsx']}`,
      ...['@nats-io/transport-node', '@nats-io/jetstream', '@nats-io/kv'].map((p) => `${p}@${dev[p]}`),
    ]);
  },
  { timeout: 300_000 },
);
after(() => rm(dir, { recursive: true, force: true }));

test('the installed package is its build: dist/ and bin/, no sources; zod comes with it; npx toolbus runs', async () => {
  const installed = join(consumer, 'node_modules/toolbus');
  for (const file of [
    'dist/index.js',
    'dist/index.d.ts',
    'dist/examples/joke-service/service.js',
    'bin/toolbus.js',
  ]) {
    assert.ok(existsSync(join(installed, file)), `the tarball has ${file}`);
  }
  // Without src/, bin/toolbus.js runs dist/ on plain Node.
  assert.equal(existsSync(join(installed, 'src')), false, 'the tarball has no src/');
  assert.ok(existsSync(join(consumer, 'node_modules/zod/package.json')), 'zod is installed as a dependency');
  const { stdout } = await exec('npx', ['toolbus', '--version'], { cwd: consumer });
  assert.equal(stdout.trim(), pkg.version);
});

test("the README's 'A tool in code' runs in the consumer", async () => {
  await writeFile(join(consumer, 'tool-in-code.ts'), readmeSnippet(readme, 'A tool in code'));
  const { stdout, stderr } = await exec(process.execPath, ['--import', 'tsx', 'tool-in-code.ts'], {
    cwd: consumer,
    timeoutMs: 60_000,
  });
  assert.doesNotMatch(stderr, /Error|at .+:\d+:\d+/, stderr);
  assert.notEqual(stdout.trim(), '', 'it prints something');
});

test("a tool service module in the consumer answers 'toolbus call' through 'toolbus up', on NATS", async (t) => {
  const nats = await startNatsServer({ jetstream: true });
  const children: ChildProcess[] = [];
  t.after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await nats.stop();
  });
  await writeFile(join(consumer, 'echo-service.ts'), readmeSnippet(readme, 'Write your own tool service'));
  const env = consumerEnv({ TOOLBUS_HOME: join(consumer, '.toolbus') });
  const bin = join(consumer, 'node_modules/toolbus/bin/toolbus.js');

  // Started through the bin file rather than npx, so a signal reaches the CLI (npx adds a shell).
  const up = await startProcess(
    process.execPath,
    [bin, 'up', '--nats', nats.url, '--port', '0', '--no-examples'],
    { cwd: consumer, env },
    /Press Ctrl-C to stop\./,
  );
  children.push(up.child);
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())?.[1];
  assert.ok(url, up.output());
  // The installed CLI is plain Node: a TypeScript module needs a loader, as `toolbus service` says.
  const service = await startProcess(
    process.execPath,
    [bin, 'service', 'echo-service.ts', '--nats', nats.url],
    { cwd: consumer, env: { ...env, NODE_OPTIONS: '--import tsx' } },
    /running \(1 replica\)/,
  );
  children.push(service.child);

  const items = {
    'tool-service/echo':
      '{"id":"echo","request-queue":"non-persistent://tg/request/echo","response-queue":"non-persistent://tg/response/echo","config-params":[{"name":"times","required":false}]}',
    'tool/echo':
      '{"type":"tool-service","name":"echo","description":"Repeat what the user says","service":"echo","times":2,"arguments":[{"name":"text","type":"string","description":"What to repeat"}]}',
  };
  for (const [item, json] of Object.entries(items)) {
    await exec('npx', ['toolbus', 'config', 'put', item, json, '--nats', nats.url], { cwd: consumer, env });
  }
  const call = await exec('npx', ['toolbus', 'call', 'echo', 'text=hi', '--user', 'bob', '--url', url], {
    cwd: consumer,
    env,
  });
  assert.match(call.stdout, /bob said: hi/);

  assert.equal(await stopProcess(service.child), 0, service.output());
  assert.equal(await stopProcess(up.child), 0, up.output());
});
