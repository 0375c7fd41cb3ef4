/**
 * @module The package as packed, against the package as checked out.
 *
 * In a checkout, package.json's exports point at `entry/<path>.js`: stubs that load `dist/<path>.js`,
 * or say in one line to run the build when there is none (`entry/load-built.js`). A packed package
 * has its build, so its exports point at `dist/<path>.js` directly (no stub, no top-level await, so
 * bundlers and `require(esm)` see plain modules). `npm pack` in a checkout rewrites package.json so
 * around the pack (`prepack`/`postpack` run `scripts/pack-manifest.ts`); {@link packPackage} stages a
 * copy instead, so nothing in the checkout changes while it packs.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** One export of package.json: its subpath (`.`, `./nats`, …) and module path under dist/ (`bus/nats/index`). */
export interface PackageEntry {
  subpath: string;
  path: string;
}

const TARGET = /^\.\/(?:entry|dist)\/(.+)\.js$/;

/** The module exports of package.json (`entry/` or `dist/` targets alike), in their order. */
export function checkoutEntries(exports: unknown): PackageEntry[] {
  const entries: PackageEntry[] = [];
  for (const [subpath, target] of Object.entries((exports ?? {}) as Record<string, unknown>)) {
    const file =
      typeof target === 'object' && target !== null ? (target as { default?: unknown }).default : target;
    const match = typeof file === 'string' ? TARGET.exec(file) : null;
    if (match) entries.push({ subpath, path: match[1]! });
  }
  return entries;
}

/**
 * package.json as packed: every export's `default` at `./dist/<path>.js` rather than the checkout's
 * `./entry/<path>.js`, and `entry` out of `files`. Idempotent, so a packed package packs unchanged.
 */
export function packedManifest(text: string): string {
  const pkg = JSON.parse(text) as { exports?: Record<string, unknown>; files?: string[] };
  for (const target of Object.values(pkg.exports ?? {})) {
    if (typeof target !== 'object' || target === null) continue;
    const entry = target as { default?: unknown };
    if (typeof entry.default === 'string') entry.default = entry.default.replace(/^\.\/entry\//, './dist/');
  }
  if (pkg.files) pkg.files = pkg.files.filter((f) => f !== 'entry');
  return `${JSON.stringify(pkg, null, 2)}\n`;
}

/** Options of {@link packPackage}. */
export interface PackPackageOptions {
  /** The build to pack. @default `<root>/dist` */
  dist?: string;
  signal?: AbortSignal;
}

/**
 * Packs the package at `root` into `destination` with `npm pack`, from a staged copy: package.json as
 * packed ({@link packedManifest}), README.md and the other `files`, and the build. Scripts are skipped
 * (the build is there). Resolves with the tarball's path.
 * @throws Error when npm is missing or fails, naming what npm said.
 */
export async function packPackage(
  root: string,
  destination: string,
  options: PackPackageOptions = {},
): Promise<string> {
  const text = await readFile(join(root, 'package.json'), 'utf8');
  const { files = [] } = JSON.parse(text) as { files?: string[] };
  const staging = await mkdtemp(join(tmpdir(), 'toolbus-pack-'));
  try {
    await writeFile(join(staging, 'package.json'), packedManifest(text));
    // npm packs README.md and LICENSE whatever `files` says.
    for (const name of ['README.md', 'LICENSE', ...files.filter((f) => f !== 'dist' && f !== 'entry')]) {
      if (existsSync(join(root, name))) await cp(join(root, name), join(staging, name), { recursive: true });
    }
    await cp(options.dist ?? join(root, 'dist'), join(staging, 'dist'), { recursive: true });
    const stdout = await npm(['pack', '--ignore-scripts', '--json', '--pack-destination', destination], {
      cwd: staging,
      signal: options.signal,
    });
    const packed = (JSON.parse(stdout) as Array<{ filename?: unknown }>)[0]?.filename;
    if (typeof packed !== 'string')
      throw new Error(`npm pack printed no tarball name: ${stdout.slice(0, 200)}`);
    return join(destination, packed);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** Runs npm and resolves with what it printed on stdout. */
function npm(args: string[], options: { cwd: string; signal?: AbortSignal }): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    execFile(
      'npm',
      args,
      // npm is npm.cmd on Windows, which only a shell runs.
      { ...options, shell: process.platform === 'win32', maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (!error) return resolvePromise(stdout);
        if ((error as { code?: unknown }).code === 'ENOENT') {
          return reject(new Error(`cannot run npm to pack toolbus: it is not on PATH`));
        }
        const detail = stderr.trim().split('\n').slice(-3).join('; ') || error.message;
        reject(new Error(`npm ${args[0]} failed: ${detail}`, { cause: error }));
      },
    );
  });
}
