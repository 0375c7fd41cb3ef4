/**
 * @module The gateway's token file, `$TOOLBUS_HOME/token` (mode 0600): `toolbus up` writes a random token
 * there when `TOOLBUS_TOKEN` is not set, and the CLI commands read it from the same home, so a local
 * `toolbus up` is protected without anyone typing a token (as Jupyter protects a loopback server).
 */
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeSync,
  closeSync,
} from 'node:fs';
import { join } from 'node:path';
import type { CliIO } from './command.js';
import { toolbusHome } from './connect.js';

/** The token file's name inside the toolbus home. */
export const TOKEN_FILE_NAME = 'token';

/** A token as `toolbus up` writes it: 32 random bytes, base64url (256 bits). */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{22,}$/;

/** The path of the token file of the home `io` names. */
export function tokenFilePath(io: Pick<CliIO, 'env' | 'cwd'>): string {
  return join(toolbusHome(io), TOKEN_FILE_NAME);
}

/**
 * The token in the home's token file, or undefined when there is none (or it is not a token file:
 * a file others may read is not trusted either, since its token is no longer a secret).
 */
export function readTokenFile(io: Pick<CliIO, 'env' | 'cwd'>): string | undefined {
  const path = tokenFilePath(io);
  try {
    const stat = lstatSync(path);
    if (!stat.isFile() || (process.platform !== 'win32' && (stat.mode & 0o077) !== 0)) return undefined;
    const token = readFileSync(path, 'utf8').trim();
    return TOKEN_SHAPE.test(token) ? token : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The token `toolbus up` protects its gateway with when `TOOLBUS_TOKEN` is not set: the one already in
 * the home's token file (so MCP clients configured with it keep working across restarts), else a new
 * random one written there with mode 0600. A file that others could read is replaced by a new token.
 */
export function ensureTokenFile(io: Pick<CliIO, 'env' | 'cwd'>): {
  token: string;
  path: string;
  created: boolean;
} {
  const path = tokenFilePath(io);
  const existing = readTokenFile(io);
  if (existing !== undefined) return { token: existing, path, created: false };
  mkdirSync(toolbusHome(io), { recursive: true, mode: 0o700 });
  const token = randomBytes(32).toString('base64url');
  // Written to a private temporary file first and renamed, so the token is never readable by others,
  // not even for a moment, and a reader never sees half a file.
  const temporary = `${path}.${process.pid}.tmp`;
  const fd = openSync(temporary, 'w', 0o600);
  try {
    writeSync(fd, `${token}\n`);
  } finally {
    closeSync(fd);
  }
  chmodSync(temporary, 0o600); // the umask cannot widen it, but an existing file's mode stays as it was
  renameSync(temporary, path);
  return { token, path, created: true };
}
