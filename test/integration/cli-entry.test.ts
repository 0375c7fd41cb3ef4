/**
 * The CLI entry point runs however node is pointed at it, e.g. through a symlinked folder (a home
 * directory or a checkout reached by a link), where argv[1] keeps the link and import.meta.url does not.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, runCli, startCli } from '../support/cli.js';

test('src/cli/main.ts run through a symlinked path still runs the command (it printed nothing, exit 0)', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'toolbus-cli-entry-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const link = join(dir, 'checkout');
  await symlink(ROOT, link, 'dir');
  const run = spawnSync(process.execPath, ['--import', 'tsx', join(link, 'src/cli/main.ts'), '--version'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
  const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  assert.equal(run.stdout, `${version}\n`, run.stderr);
  assert.equal(run.status, 0);
});

test('toolbus up refuses a stray argument or a bad --port as usage errors (exit 2) before starting anything', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-up-usage-'));
  t.after(() => rm(home, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home };
  // Without the check, '9000' was ignored and up went on with its defaults (here: refusing 0.0.0.0).
  const stray = await runCli(['up', '9000', '--host', '0.0.0.0', '--no-examples'], env);
  assert.equal(stray.code, 2, stray.stderr);
  assert.match(stray.stderr, /unexpected argument '9000'/);
  assert.match(stray.stderr, /toolbus up --help/);
  const port = await runCli(['up', '--port', 'abc'], env);
  assert.equal(port.code, 2, port.stderr);
  assert.match(port.stderr, /--port must be a number from 0 to 65535, got 'abc'/);
});

test('up and service --help name the environment variables that change what they connect to', async () => {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME };
  const up = await runCli(['up', '--help'], env);
  assert.equal(up.code, 0);
  assert.match(up.stdout, /TOOLBUS_NATS\s+NATS server to run on, as --nats/);
  assert.match(up.stdout, /TOOLBUS_HOME/);
  const service = await runCli(['service', '--help'], env);
  assert.equal(service.code, 0);
  assert.match(service.stdout, /\(default: \$TOOLBUS_NATS\)/);
});

test('toolbus up stops cleanly on SIGHUP (a closed terminal), as on Ctrl-C', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-sighup-'));
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home };
  const up = await startCli(['up', '--port', '0', '--no-examples'], env, /Press Ctrl-C to stop\./);
  t.after(async () => {
    if (up.child.exitCode === null) up.child.kill('SIGKILL');
    await rm(home, { recursive: true, force: true });
  });
  const exited = new Promise<[number | null, string | null]>((resolve) =>
    up.child.once('exit', (code, signal) => resolve([code, signal])),
  );
  up.child.kill('SIGHUP');
  assert.deepEqual(await exited, [0, null], up.output());
  assert.match(up.output(), /toolbus: stopped/);
});

test('Ctrl-C while a command waits says it was cancelled and exits 130', async (t) => {
  // A gateway that takes the call and never answers.
  let received!: () => void;
  const gotRequest = new Promise<void>((resolve) => (received = resolve));
  const server = createServer(() => received());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(ROOT, 'src/cli/main.ts'),
      'call',
      'slow',
      '{}',
      '--url',
      `http://127.0.0.1:${port}`,
    ],
    { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME } },
  );
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  await gotRequest;
  child.kill('SIGINT');
  assert.equal(await exited, 130, stderr);
  assert.equal(stderr, 'toolbus call: cancelled (received SIGINT)\n');
});

test('a gateway URL without http:// is a usage error that says so, not "cannot reach toolbus"', async () => {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME };
  const flag = await runCli(['tools', '--url', 'localhost:8888'], env);
  assert.equal(flag.code, 2, flag.stderr);
  assert.match(
    flag.stderr,
    /--url must be an http:\/\/ or https:\/\/ URL such as http:\/\/127\.0\.0\.1:8888, got 'localhost:8888'/,
  );
  const fromEnv = await runCli(['call', 'tell-joke', 'topic=cats'], {
    ...env,
    TOOLBUS_URL: '127.0.0.1:8888',
  });
  assert.equal(fromEnv.code, 2, fromEnv.stderr);
  assert.match(fromEnv.stderr, /TOOLBUS_URL must be an http:\/\/ or https:\/\/ URL/);
});
