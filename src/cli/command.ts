/**
 * @module The shape of a CLI command and its I/O, so commands can be tested in-process.
 */
import type { Readable, Writable } from 'node:stream';
import { ToolbusError } from '../errors/index.js';

/** Where a command reads and writes. */
export interface CliIO {
  stdin: Readable;
  stdout: Writable;
  stderr: Writable;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Aborted on Ctrl-C (SIGINT) or SIGTERM. */
  signal: AbortSignal;
}

/** One `toolbus <name>` command. */
export interface CliCommand {
  name: string;
  /** One line for `toolbus --help`. */
  summary: string;
  /** The full `toolbus <name> --help` text. */
  help: string;
  /** Runs the command; resolves with the exit code (0 success, 1 error, 2 usage). */
  run(argv: string[], io: CliIO): Promise<number>;
}

/** Thrown by a command for bad usage; `main` prints the message and the command's help hint, exit 2. */
export class UsageError extends ToolbusError {
  constructor(message: string) {
    super('usage', message);
  }
}

/** Exit codes every command uses; `Interrupted` (128 + SIGINT) when a signal cancelled the command. */
export const ExitCode = { Ok: 0, Error: 1, Usage: 2, Interrupted: 130 } as const;
