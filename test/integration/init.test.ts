/**
 * `toolbus init`: the project it writes installs from the npm cache and passes its own `npm test`; it
 * refuses a folder that is not empty, and a name npm would not take.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../support/cli.js';
import { consumerEnv, exec, installConsumer, packToolbus, rootPackageJson } from '../support/pack.js';

const pkg = await rootPackageJson();
let dir: string;
let consumer: string;

before(
  async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolbus-init-'));
    // An installed toolbus, as a user who got the tarball has it: its init packs itself for the project.
    consumer = join(dir, 'consumer');
    await installConsumer(consumer, [await packToolbus(dir)]);
  },
  { timeout: 300_000 },
);
after(() => rm(dir, { recursive: true, force: true }));

test(
  'toolbus init writes a project that installs from the npm cache and passes its own npm test',
  // An install and a type-check: well under a minute on an idle machine, longer on a loaded one.
  { timeout: 240_000 },
  async () => {
    const project = join(dir, 'my-tool');
    const bin = join(consumer, 'node_modules/toolbus/bin/toolbus.js');
    const init = await exec(process.execPath, [bin, 'init', project], { cwd: consumer });
    assert.match(init.stdout, /Created my-tool in /);
    assert.match(init.stdout, /\n {2}cd \S+my-tool\n {2}npm install\b.*\n {2}npm test\n/);

    const manifest = JSON.parse(await readFile(join(project, 'package.json'), 'utf8')) as {
      type: string;
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    assert.equal(manifest.type, 'module');
    assert.equal(manifest.dependencies['toolbus'], `file:vendor/toolbus-${pkg.version}.tgz`);
    assert.ok(existsSync(join(project, 'vendor', `toolbus-${pkg.version}.tgz`)), 'the tarball is vendored');
    // Pinned as the repository pins them, so they are in the cache its `npm ci` filled.
    assert.equal(manifest.dependencies['zod'], pkg.dependencies['zod']);
    for (const name of ['typescript', 'tsx', '@types/node']) {
      assert.equal(manifest.devDependencies[name], pkg.devDependencies[name], name);
    }
    for (const file of ['src/tools.ts', 'src/service.ts', 'config/tool-service.json', 'config/tool.json']) {
      assert.ok(existsSync(join(project, file)), file);
    }
    const service = JSON.parse(await readFile(join(project, 'config/tool-service.json'), 'utf8')) as {
      id: string;
    };
    const tool = JSON.parse(await readFile(join(project, 'config/tool.json'), 'utf8')) as { service: string };
    assert.equal(service.id, 'my-tool');
    assert.equal(tool.service, 'my-tool', 'the tool item names the service item');

    // --ignore-scripts skips compiling better-sqlite3 (about a minute), which only `npm start` uses.
    await exec('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], {
      cwd: project,
      timeoutMs: 180_000,
    });
    const { stdout } = await exec('npm', ['test'], { cwd: project, env: consumerEnv(), timeoutMs: 120_000 });
    assert.match(stdout, /^# pass 2$/m, stdout);
    assert.match(stdout, /^# fail 0$/m, stdout);
  },
);

test('toolbus init refuses a folder that is not empty, a file, and a name npm would not take', async () => {
  const env = { PATH: process.env.PATH, HOME: process.env.HOME };
  const taken = join(dir, 'taken');
  await mkdir(taken);
  await writeFile(join(taken, 'notes.txt'), 'mine');
  const refused = await runCli(['init', taken], env);
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(refused.stderr, /is not empty \(it has notes\.txt\).*Name a new or empty folder/);
  assert.deepEqual(await readdir(taken), ['notes.txt'], 'nothing was written');

  const file = join(taken, 'notes.txt');
  const notFolder = await runCli(['init', file], env);
  assert.equal(notFolder.code, 1, notFolder.stderr);
  assert.match(notFolder.stderr, /is a file, not a folder/);

  const badName = await runCli(['init', join(dir, 'fresh'), '--name', 'My Tool'], env);
  assert.equal(badName.code, 2, badName.stderr);
  assert.match(badName.stderr, /--name 'My Tool' is not an npm package name/);
  assert.equal(existsSync(join(dir, 'fresh')), false, 'no folder was made');

  const help = await runCli(['init', '--help'], env);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^Usage: toolbus init \[dir\]/);
});
