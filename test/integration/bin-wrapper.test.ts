/**
 * bin/toolbus.js, the wrapper that runs the CLI in a child process: how it reports the child's end.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ROOT } from '../support/cli.js';

test(
  'bin/toolbus.js: a CLI child killed by a signal makes the wrapper exit 128 + n, not 1',
  // The child's pid is read from /proc.
  { timeout: 90_000, skip: process.platform !== 'linux' },
  async (t) => {
    const home = await mkdtemp(join(tmpdir(), 'toolbus-bin-signal-'));
    t.after(() => rm(home, { recursive: true, force: true }));
    const wrapper = spawn(
      process.execPath,
      [join(ROOT, 'bin/toolbus.js'), 'up', '--port', '0', '--no-examples'],
      {
        cwd: home,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home },
      },
    );
    t.after(() => {
      if (wrapper.exitCode === null && wrapper.signalCode === null) wrapper.kill('SIGKILL');
    });
    const exited = new Promise<number | null>((resolve) => wrapper.once('exit', (code) => resolve(code)));
    let out = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not ready:\n${out}`)), 60_000);
      wrapper.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('Press Ctrl-C to stop.')) {
          clearTimeout(timer);
          resolve();
        }
      });
      wrapper.stderr.on('data', (d: Buffer) => (out += d.toString()));
      void exited.then((code) => reject(new Error(`exited early with ${code}:\n${out}`)));
    });
    const pid = wrapper.pid as number;
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/);
    assert.equal(children.length, 1, `children of the wrapper: ${children.join(' ')}`);
    // As the OOM killer or `kill -9` would: the CLI gets no chance to exit with a code of its own.
    process.kill(Number(children[0]), 'SIGKILL');
    assert.equal(await exited, 137, out);
  },
);

/** Runs `node [...nodeArgs] <wrapper> --version` to completion (killed after 60 s). */
function runWrapper(
  wrapper: string,
  nodeArgs: string[] = [],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, wrapper, '--version'], {
      cwd: tmpdir(),
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
    });
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

test('bin/toolbus.js: a checkout without node_modules says to run npm ci, not a stack trace', async (t) => {
  // The wrapper and a stub CLI source, in a folder with no node_modules above it: tsx cannot be found.
  const dir = await mkdtemp(join(tmpdir(), 'toolbus-bin-notsx-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await mkdir(join(dir, 'bin'));
  await mkdir(join(dir, 'src/cli'), { recursive: true });
  await copyFile(join(ROOT, 'bin/toolbus.js'), join(dir, 'bin/toolbus.js'));
  await writeFile(join(dir, 'src/cli/main.ts'), "console.log('stub');\n");
  const run = await runWrapper(join(dir, 'bin/toolbus.js'));
  assert.notEqual(run.code, 0);
  assert.equal(run.stdout, '');
  const lines = run.stderr.trim().split('\n');
  assert.equal(lines.length, 1, run.stderr);
  assert.match(lines[0] ?? '', /tsx/);
  assert.match(lines[0] ?? '', /npm ci/);
});

test('bin/toolbus.js: a CLI child that cannot be started gives one clear line, not a stack trace', async () => {
  // As when the Node.js binary was removed or replaced under a running process: spawn reports ENOENT.
  const preload = `data:text/javascript,process.execPath=${encodeURIComponent(JSON.stringify('/nonexistent/node'))}`;
  const run = await runWrapper(join(ROOT, 'bin/toolbus.js'), ['--import', preload]);
  assert.notEqual(run.code, 0);
  const lines = run.stderr.trim().split('\n');
  assert.equal(lines.length, 1, run.stderr);
  assert.match(lines[0] ?? '', /cannot start the CLI/);
  assert.match(lines[0] ?? '', /ENOENT/);
});
