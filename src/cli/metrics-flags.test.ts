import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runMain, type InProcessRun } from '../../test/support/cli-in-process.js';

/** Runs the CLI in this process with no environment; what it printed and its exit code. */
const run = (argv: string[]): Promise<InProcessRun> => runMain(argv);

test('--metrics-port takes a port from 0 to 65535; anything else is a usage error (exit 2) before anything starts', async () => {
  for (const argv of [
    ['up', '--metrics-port', 'abc'],
    ['up', '--metrics-port=70000'],
    ['up', '--metrics-port', ''],
    ['service', './missing.ts', '--nats', 'nats://127.0.0.1:1', '--metrics-port', '1.5'],
  ]) {
    const result = await run(argv);
    assert.equal(result.code, 2, `${argv.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, /--metrics-port must be a number from 0 to 65535, got '/);
  }
});

test('up and service --help describe --metrics-port', async () => {
  for (const command of ['up', 'service']) {
    const help = await run([command, '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--metrics-port PORT\n[^-]{0,200}127\.0\.0\.1:PORT\/metrics/);
  }
});
