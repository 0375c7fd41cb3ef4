/**
 * @module The web console's files: `GET /` answers its `index.html` and `GET /console/<file>` its
 * assets, from the folder the gateway was given (`consoleDir`). Public: the page holds no data, and
 * every API call it makes needs the token. Only regular files inside that folder (after resolving
 * symlinks) of the kinds listed here are served, each with a strict Content-Security-Policy.
 */
import { createReadStream, type Stats } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { extname, join, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { HttpError } from './http-error.js';
import { decodePathPart, headerValue, type RouteContext } from './route-context.js';

/** The CSP of every console file: its own scripts, styles and API only, never framed. */
export const CONSOLE_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

/** What `GET /` answers (503) when the folder or its `index.html` is missing. */
export const CONSOLE_NOT_BUILT_MESSAGE = 'the web console is not built: run `npm run build`';

/** The kinds of file served, by extension; any other is 404. */
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.map': 'application/json; charset=utf-8',
};

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONSOLE_CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-resource-policy': 'same-origin',
};

/** `GET /` and `HEAD /`: the console's `index.html`, or 503 text/plain when it was not built. */
export async function serveConsoleIndex(ctx: RouteContext, dir: string): Promise<void> {
  const file = await resolveInside(dir, ['index.html']);
  if (file === undefined) {
    const body = `${CONSOLE_NOT_BUILT_MESSAGE}\n`;
    ctx.res.writeHead(503, {
      ...ctx.headers,
      'content-type': 'text/plain; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
    ctx.res.end(ctx.method === 'HEAD' ? undefined : body);
    return;
  }
  await sendFile(ctx, file.path, file.stats);
}

/** `GET /console/<path>` and `HEAD`: one asset of the console; 404 for anything else. */
export async function serveConsoleAsset(ctx: RouteContext, dir: string, path: string): Promise<void> {
  const segments = path.split('/').map(decodePathPart);
  // No way out of the folder, nor into hidden files: every segment a plain name.
  const plain = segments.every((s) => s !== '' && !s.startsWith('.') && !/[/\\\0]/.test(s));
  const type = CONTENT_TYPES[extname(segments.at(-1) ?? '').toLowerCase()];
  const file = plain && type !== undefined ? await resolveInside(dir, segments) : undefined;
  if (file === undefined) {
    throw new HttpError(404, 'not-found', `the web console has no file '${path.slice(0, 200)}'`);
  }
  await sendFile(ctx, file.path, file.stats);
}

/**
 * The real path of `segments` under `dir` and its stats, when that is a regular file inside the real
 * `dir` (a symlink pointing out of it does not count); else undefined.
 */
async function resolveInside(
  dir: string,
  segments: readonly string[],
): Promise<{ path: string; stats: Stats } | undefined> {
  try {
    const root = await realpath(dir);
    const path = await realpath(join(root, ...segments));
    if (!path.startsWith(root + sep)) return undefined;
    const stats = await stat(path);
    return stats.isFile() ? { path, stats } : undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return undefined;
    throw error;
  }
}

async function sendFile(ctx: RouteContext, path: string, stats: Stats): Promise<void> {
  const { res } = ctx;
  const etag = `W/"${stats.size.toString(16)}-${Math.floor(stats.mtimeMs).toString(16)}"`;
  const headers = {
    ...ctx.headers,
    ...SECURITY_HEADERS,
    // Fixed file names (console.js, not hashed): the browser revalidates each time, a 304 when unchanged.
    'cache-control': 'no-cache',
    etag,
    'last-modified': stats.mtime.toUTCString(),
  };
  if (headerValue(ctx.req, 'if-none-match') === etag) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  res.writeHead(200, {
    ...headers,
    'content-type': CONTENT_TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream',
    'content-length': stats.size,
  });
  if (ctx.method === 'HEAD') {
    res.end();
    return;
  }
  try {
    await pipeline(createReadStream(path), res);
  } catch {
    // The client went away, or the file changed under us: the head is sent, so only cutting is left.
    res.destroy();
  }
}
