/**
 * @module Keeps this machine's file paths out of what the gateway tells a client: a store error such as
 * "cannot open /home/alice/work/.toolbus/config.db" tells a stranger the user name and the layout of the
 * disk. The file name stays (`…/config.db`), so the message still says what failed.
 */
import { homedir, tmpdir } from 'node:os';

/** First path segments that only a file path starts with (never a route of the gateway). */
const ROOTS = [
  'home',
  'root',
  'tmp',
  'usr',
  'var',
  'etc',
  'opt',
  'srv',
  'mnt',
  'media',
  'proc',
  'sys',
  'dev',
  'run',
  'Users',
  'private',
  'Volumes',
  'nix',
  'snap',
  'lib',
  'lib64',
  'bin',
  'sbin',
  'boot',
  'workspace',
  'workspaces',
  'builds',
  'app',
  'data',
  'work',
];

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function rootsOfThisMachine(): string[] {
  const roots = new Set(ROOTS);
  for (const dir of [process.cwd(), homedir(), tmpdir()]) {
    const first = /^\/([^/]+)/.exec(dir)?.[1];
    if (first) roots.add(first);
  }
  return [...roots];
}

const PATH_END = `[^\\s'"\`)\\]},;]*`;
const POSIX = new RegExp(
  `(?<![\\w.:/~-])(?:file://)?/(?:${rootsOfThisMachine().map(escape).join('|')})(?=/|\\b)${PATH_END}`,
  'g',
);
const WINDOWS = new RegExp(`(?<![\\w])(?:[A-Za-z]:\\\\|\\\\\\\\)${PATH_END}`, 'g');

function shorten(path: string): string {
  const name =
    path
      .replace(/[\\/]+$/, '')
      .split(/[\\/]/)
      .pop() ?? '';
  return name === '' || /^[A-Za-z]:$/.test(name) ? '…' : `…/${name}`;
}

/**
 * Replaces the absolute file paths in `text` (POSIX paths under a system or home root, `file://` URLs,
 * Windows drive and UNC paths) by `…/<file name>`. URLs and the gateway's own routes (`/api/v1/…`,
 * `/mcp`) are left as they are.
 *
 * @example
 * ```ts
 * redactMachinePaths("unable to open database file '/home/alice/.toolbus/config.db'");
 * // "unable to open database file '…/config.db'"
 * ```
 */
export function redactMachinePaths(text: string): string {
  return text.replace(POSIX, shorten).replace(WINDOWS, shorten);
}
