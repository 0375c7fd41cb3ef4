/**
 * Runs the toolbus CLI (`src/cli/main.ts` through tsx) as a child process, the way a user would.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (the CLI's working directory). */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'src/cli/main.ts');

/** What a finished CLI run printed and how it exited. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `toolbus <args>` to completion (killed after 60 s), with `stdin` as its input. */
export function runCli(args: string[], env: NodeJS.ProcessEnv, stdin = ''): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], { cwd: ROOT, env });
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
    child.stdin.end(stdin);
  });
}

/** A long-running CLI command (`up`, `service`) that printed its ready line. */
export interface StartedCli {
  child: ChildProcess;
  /** Everything it printed so far, stdout and stderr. */
  output(): string;
}

/** Starts `toolbus <args>` and resolves once its output matches `ready` (rejects after 60 s or on exit). */
export function startCli(args: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<StartedCli> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], { cwd: ROOT, env });
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`'toolbus ${args.join(' ')}' did not get ready within 60 s:\n${out}`));
    }, 60_000);
    const onExit = (code: number | null): void => {
      clearTimeout(timer);
      reject(new Error(`'toolbus ${args.join(' ')}' exited early with ${code}:\n${out}`));
    };
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (ready.test(out)) {
        clearTimeout(timer);
        child.off('exit', onExit);
        resolve({ child, output: () => out });
      }
    });
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', onExit);
  });
}

/** Sends SIGINT (Ctrl-C) unless it already exited, and resolves with the exit code. */
export function interrupt(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.once('exit', (code) => resolve(code));
    child.kill('SIGINT');
  });
}

/** An in-process CLI io for `startSystem`/`main` in a home folder: stdout drained, stderr kept in `errors()`. */
export function homeIo(home: string): {
  io: {
    stdin: PassThrough;
    stdout: PassThrough;
    stderr: PassThrough;
    env: NodeJS.ProcessEnv;
    cwd: string;
    signal: AbortSignal;
  };
  errors: () => string;
} {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let errors = '';
  stderr.on('data', (c: Buffer) => (errors += c.toString()));
  stdout.resume();
  const io = {
    stdin: new PassThrough(),
    stdout,
    stderr,
    env: { TOOLBUS_HOME: home },
    cwd: home,
    signal: new AbortController().signal,
  };
  return { io, errors: () => errors };
}
