#!/usr/bin/env node
// Runs the CLI: from the TypeScript sources through tsx in a checkout (so edits apply at once), or from
// the built dist/ in an installed package. Signals are passed on, so a process manager's SIGTERM stops
// the CLI (and frees its port) rather than only this wrapper.
import { existsSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const source = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const built = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

/** Ends the wrapper with one line saying what is wrong (no stack trace). */
function fail(message) {
  process.stderr.write(`toolbus: ${message}\n`);
  process.exit(1);
}

/** tsx, resolved from this package (not from the caller's working directory). */
function resolveTsx() {
  try {
    return import.meta.resolve('tsx');
  } catch {
    // A checkout whose dependencies were never installed.
    return fail(
      `cannot run the CLI from the sources in ${root}: the 'tsx' package is not installed; run 'npm ci' there`,
    );
  }
}

const args = existsSync(source) ? ['--import', resolveTsx(), source] : [built];
const child = spawn(process.execPath, [...args, ...process.argv.slice(2)], { stdio: 'inherit' });
// Without a listener, a child that cannot be started (or signalled) ends the wrapper in a stack trace.
child.on('error', (error) => {
  if (child.pid === undefined) fail(`cannot start the CLI with ${process.execPath}: ${error.message}`);
  else process.stderr.write(`toolbus: ${error.message}\n`);
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  // Ctrl-C reaches the child through the terminal's process group too, so it may see it twice: the CLI
  // counts two signals within half a second as one (src/cli/main.ts).
  process.on(signal, () => child.kill(signal));
}
// A child killed by a signal exits as a shell reports it: 128 + the signal's number (137 for SIGKILL,
// 143 for SIGTERM), so callers can tell a kill from an ordinary failure.
child.on('exit', (code, signal) =>
  process.exit(code ?? (signal ? 128 + (constants.signals[signal] ?? 0) : 0)),
);
