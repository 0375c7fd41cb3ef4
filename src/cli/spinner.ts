/**
 * @module A terminal spinner on stderr, shown only when stderr is a TTY.
 */
import type { CliIO } from './command.js';

/** A running spinner. */
export interface Spinner {
  /** Erases the spinner line so other output can be printed; it comes back on the next tick. */
  clear(): void;
  /** Stops and erases it. Idempotent. */
  stop(): void;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** Starts a spinner with a label; does nothing when stderr is not a terminal. */
export function startSpinner(io: CliIO, label = 'thinking'): Spinner {
  const stream = io.stderr as NodeJS.WriteStream;
  if (!stream.isTTY) return { clear() {}, stop() {} };
  let frame = 0;
  let visible = false;
  const timer = setInterval(() => {
    stream.write(`\r${FRAMES[frame++ % FRAMES.length]} ${label}…`);
    visible = true;
  }, 80);
  const clear = (): void => {
    if (visible) stream.write('\r\x1b[2K');
    visible = false;
  };
  return {
    clear,
    stop() {
      clearInterval(timer);
      clear();
    },
  };
}
