/**
 * Runs the toolbus CLI's `main` in this process, with its output captured: for tests of argument
 * parsing and of commands against a server the test runs, without the cost of a child process.
 */
import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/main.js';

/** What a run printed and how it exited. */
export interface InProcessRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `toolbus <argv>` with an empty stdin, `env` (default none) and `cwd` (default this process's). */
export async function runMain(
  argv: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<InProcessRun> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => (out += c.toString()));
  stderr.on('data', (c: Buffer) => (err += c.toString()));
  const stdin = new PassThrough();
  stdin.end();
  const code = await main(argv, {
    stdin,
    stdout,
    stderr,
    env: options.env ?? {},
    cwd: options.cwd ?? process.cwd(),
    signal: new AbortController().signal,
  });
  return { code, stdout: out, stderr: err };
}
