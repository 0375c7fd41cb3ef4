import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DUPLICATE_SIGNAL_MS, signalHandler } from './main.js';

test('one Ctrl-C delivered twice (terminal group, then bin/toolbus.js) stops cleanly; a later second press exits 130', () => {
  let clock = 1_000;
  const exits: number[] = [];
  const controller = new AbortController();
  const onSignal = signalHandler(
    controller,
    (code) => void exits.push(code),
    () => clock,
  );
  onSignal('SIGINT');
  assert.equal(controller.signal.aborted, true);
  assert.match(String((controller.signal.reason as Error).message), /received SIGINT/);
  clock += 5;
  onSignal('SIGINT'); // the wrapper's copy of the same press
  assert.deepEqual(exits, []);
  clock += DUPLICATE_SIGNAL_MS;
  onSignal('SIGINT'); // the user pressing again: stop now
  assert.deepEqual(exits, [130]);
});

test('a misspelled command or option gets "did you mean" and exit 2', async () => {
  const { main } = await import('./main.js');
  const { PassThrough } = await import('node:stream');
  const run = async (argv: string[]): Promise<{ code: number; stderr: string }> => {
    const stderr = new PassThrough();
    let text = '';
    stderr.on('data', (c: Buffer) => (text += c.toString()));
    const code = await main(argv, {
      stdin: new PassThrough(),
      stdout: new PassThrough(),
      stderr,
      env: {},
      cwd: process.cwd(),
      signal: new AbortController().signal,
    });
    return { code, stderr: text };
  };
  const command = await run(['tols']);
  assert.equal(command.code, 2);
  assert.match(command.stderr, /unknown command 'tols' \(did you mean 'tools'\?\)/);
  const option = await run(['config', 'list', '--stroe', 'x.db']);
  assert.equal(option.code, 2);
  assert.match(option.stderr, /Unknown option '--stroe' \(did you mean '--store'\?\)/);
});
