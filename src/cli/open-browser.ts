/**
 * @module Opens a URL in the person's browser, for `toolbus mcp login`: the platform's opener
 * (`xdg-open`, `open`, `start`), detached, its output ignored. The URL is printed too, so a machine
 * without a browser (or an opener that fails) still works.
 */
import { spawn } from 'node:child_process';

/**
 * Starts the platform's URL opener for `url`. Resolves false when none could be started (the caller
 * has printed the URL anyway); never rejects.
 */
export function openBrowser(url: string, platform: NodeJS.Platform = process.platform): Promise<boolean> {
  const [command, args] =
    platform === 'darwin'
      ? ['open', [url]]
      : platform === 'win32'
        ? // start's first quoted argument is a window title; the URL is passed as its own argument.
          ['cmd', ['/c', 'start', '""', url.replace(/&/g, '^&')]]
        : ['xdg-open', [url]];
  return new Promise((resolve) => {
    try {
      const child = spawn(command, args, { detached: true, stdio: 'ignore' });
      child.once('error', () => resolve(false));
      child.once('spawn', () => {
        child.unref();
        resolve(true);
      });
    } catch {
      resolve(false);
    }
  });
}
