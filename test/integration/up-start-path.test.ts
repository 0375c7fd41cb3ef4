/**
 * `toolbus up` serves before it loads the libraries it does not need to serve: the OpenTelemetry API
 * (only with a tracer provider), prom-client and pino (shortly after it serves). Checked in a process of
 * its own at the moment the banner is written, when the gateway already answers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { ROOT } from '../support/cli.js';

const MODULE_LOG = fileURLToPath(new URL('../fixtures/module-log.mjs', import.meta.url));

test('toolbus up loads neither the OpenTelemetry API, prom-client nor pino before it serves', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-start-path-'));
  t.after(() => rm(home, { recursive: true, force: true }));
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', '--import', MODULE_LOG, join(ROOT, 'test/fixtures/start-path.ts')],
    {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        TOOLBUS_HOME: home,
        TOOLBUS_TOKEN: 'start-path-test-token-0123456789',
        TOOLBUS_TEST_MODULE_LOG: join(home, 'modules.log'),
      },
      timeout: 60_000,
    },
  );
  const lines = stdout
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { atBanner?: string[]; exit?: number });
  assert.deepEqual(lines[0], { atBanner: [] }, stdout);
  assert.deepEqual(lines[1], { exit: 0 }, stdout);
});
