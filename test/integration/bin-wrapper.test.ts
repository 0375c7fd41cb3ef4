/**
 * bin/toolbus.js, the wrapper that runs the CLI in a child process: how it reports the child's end.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
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
