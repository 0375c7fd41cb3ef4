/**
 * @module Opens a URL in the person's browser, for `toolbus mcp login`: the platform's opener
 * (`xdg-open`, `open`, or Windows' URL handler), detached, its output ignored. The URL is printed too,
 * so a machine without a browser (or an opener that fails) still works.
 */
import { spawn } from 'node:child_process';

/**
 * Starts the platform's URL opener for `url`. Only an `https:` or `http:` URL is opened: the URL comes
 * from an authorization server's metadata, and an opener handed a `file:` path or another scheme would
 * run whatever the system associates with it. No shell sees the URL (Windows' `start` would read `|`
 * and `&` in a query as commands). Resolves false when nothing was started (the caller has printed the
 * URL anyway); never rejects.
 */
export function openBrowser(url: string, platform: NodeJS.Platform = process.platform): Promise<boolean> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return Promise.resolve(false);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return Promise.resolve(false);
  const [command, args] =
    platform === 'darwin'
      ? ['open', [parsed.href]]
      : platform === 'win32'
        ? ['rundll32', ['url.dll,FileProtocolHandler', parsed.href]]
        : ['xdg-open', [parsed.href]];
  return new Promise((resolve) => {
    try {
      const child = spawn(command, args, { detached: true, stdio: 'ignore', shell: false });
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
