/**
 * @module The package as a user gets it: packed with `npm pack` from the current build and installed
 * into a fresh consumer folder from the npm cache that the repository's `npm ci` filled.
 *
 * The package is staged in a temporary copy, never built into the checkout's dist/, so tests running
 * at the same time keep their files. Installs use `--prefer-offline`: every tarball comes from the
 * cache, but npm 11 resolves a dependency that is new to a folder from the full registry metadata,
 * which `npm ci` does not cache (it keeps the abbreviated kind), so a first install with `--offline`
 * fails with ENOTCACHED even right after `npm ci`; `--prefer-offline` fetches only that metadata.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { packPackage } from '../../src/cli/package-manifest.js';
import { ROOT } from './cli.js';

const run = promisify(execFile);

/** The repository's package.json, for the versions it pins. */
export interface RootPackageJson {
  name: string;
  version: string;
  files: string[];
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
}

/** Reads the repository's package.json. */
export async function rootPackageJson(): Promise<RootPackageJson> {
  return JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as RootPackageJson;
}

/**
 * The environment for npm and the CLI in a consumer, plus `extra`. Without NODE_TEST_CONTEXT, a
 * `node --test` the consumer runs reports to its own output instead of to this test runner; without the
 * caller's NODE_OPTIONS, only what a test passes is loaded.
 */
export function consumerEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  delete env.NODE_OPTIONS;
  return { ...env, ...extra };
}

/** Runs a command to completion; on failure the error says what it printed. */
export async function exec(
  file: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run(file, args, {
      cwd: options.cwd,
      env: options.env ?? consumerEnv(),
      timeout: options.timeoutMs ?? 120_000,
      maxBuffer: 32 * 1024 * 1024,
    });
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `'${[file, ...args].join(' ')}' in ${options.cwd} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`,
      { cause: error },
    );
  }
}

/**
 * Packs the package as a release would ({@link packPackage}: package.json as packed, `files`, `bin`
 * and `exports` apply) into `dir`, with {@link currentBuild}'s dist/ (the checkout's own as `npm ci`
 * leaves it, its `prepare` script builds). Nothing in the checkout changes. Resolves with the tarball's path.
 */
export async function packToolbus(dir: string): Promise<string> {
  return packPackage(ROOT, dir, { dist: await currentBuild() });
}

/**
 * A dist/ of the current sources: the checkout's own when it is newer than every input of the build,
 * else {@link sharedBuild}'s. Resolves with its path.
 */
export async function currentBuild(): Promise<string> {
  const inputs = await buildInputs();
  return (await distIsCurrent(inputs)) ? join(ROOT, 'dist') : sharedBuild(inputs);
}

/** What the build reads: the sources, the example it compiles, its configs and script. */
const BUILD_INPUTS = [
  'src',
  'examples',
  'tsconfig.json',
  'tsconfig.build.json',
  'scripts/build-examples.mjs',
];

/** One file the build reads. */
interface BuildInput {
  path: string;
  size: number;
  mtimeMs: number;
}

/** Every file under {@link BUILD_INPUTS}. */
async function buildInputs(): Promise<BuildInput[]> {
  const out: BuildInput[] = [];
  const walk = async (path: string): Promise<void> => {
    const info = await stat(path);
    if (!info.isDirectory()) {
      out.push({ path, size: info.size, mtimeMs: info.mtimeMs });
      return;
    }
    for (const entry of (await readdir(path)).sort()) await walk(join(path, entry));
  };
  for (const input of BUILD_INPUTS) await walk(join(ROOT, input));
  return out;
}

/** True when the checkout's dist/ was built after the last change to any of its inputs. */
async function distIsCurrent(inputs: readonly BuildInput[]): Promise<boolean> {
  const outputs = ['dist/index.js', 'dist/examples/joke-service/service.js'].map((f) => join(ROOT, f));
  if (!outputs.every((f) => existsSync(f))) return false;
  const built = Math.min(...(await Promise.all(outputs.map(async (f) => (await stat(f)).mtimeMs))));
  return inputs.every((input) => input.mtimeMs < built);
}

/** Builds older than this are removed when a new one is made (a build is about 5 MB). */
const STALE_BUILD_MS = 60 * 60 * 1000;

/**
 * A build of the current sources (the `build` script's two steps, about 20 s), shared by the test
 * files of a run and by later runs while the sources stay the same. It lives in
 * `<tmpdir>/toolbus-pack-build-<hash>/dist`, the hash taken over the inputs' paths, sizes and times.
 * The first caller builds while holding a lock folder; the others wait for it.
 */
async function sharedBuild(inputs: readonly BuildInput[]): Promise<string> {
  const key = createHash('sha256').update(JSON.stringify(inputs)).digest('hex').slice(0, 16);
  const base = join(tmpdir(), `toolbus-pack-build-${key}`);
  const dist = join(base, 'dist');
  const done = join(base, 'done');
  const lock = `${base}.lock`;
  const deadline = Date.now() + 180_000;
  while (!existsSync(done)) {
    try {
      await mkdir(lock);
    } catch {
      // Another test file is building. A lock left behind by a run that was killed goes after 10 min.
      if (Date.now() - ((await mtimeOf(lock)) ?? Date.now()) > 600_000)
        await rm(lock, { force: true, recursive: true });
      if (Date.now() > deadline) throw new Error(`the build in ${base} did not finish within 180 s`);
      await new Promise((resolve) => setTimeout(resolve, 500));
      continue;
    }
    try {
      await rm(base, { recursive: true, force: true });
      const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
      await exec(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', dist], {
        cwd: ROOT,
      });
      await exec(process.execPath, [join(ROOT, 'scripts/build-examples.mjs'), dist], { cwd: ROOT });
      await writeFile(done, '');
      await removeStaleBuilds(base);
    } finally {
      await rm(lock, { recursive: true, force: true });
    }
  }
  return dist;
}

/** Removes the shared builds other than `keep` that were made more than an hour ago. */
async function removeStaleBuilds(keep: string): Promise<void> {
  for (const name of await readdir(tmpdir())) {
    const path = join(tmpdir(), name);
    if (!/^toolbus-pack-build-[0-9a-f]{16}$/.test(name) || path === keep) continue;
    if (Date.now() - ((await mtimeOf(join(path, 'done'))) ?? 0) > STALE_BUILD_MS) {
      await rm(path, { recursive: true, force: true });
    }
  }
}

/** A file's modification time, undefined when it is not there. */
function mtimeOf(path: string): Promise<number | undefined> {
  return stat(path).then(
    (info) => info.mtimeMs,
    () => undefined,
  );
}

/**
 * Makes `dir` a consumer project (`"type": "module"`) and installs `packages` into it (npm specs:
 * a tarball path, `zod@4.6.7`, ...) from the npm cache.
 */
export async function installConsumer(dir: string, packages: string[]): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }, null, 2),
  );
  await exec('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...packages], {
    cwd: dir,
    timeoutMs: 180_000,
  });
}

/** A long-running process that printed its ready line. */
export interface StartedProcess {
  child: ChildProcess;
  /** Everything it printed so far, stdout and stderr. */
  output(): string;
}

/** Starts `file args` and resolves once its output matches `ready` (rejects after 60 s or on exit). */
export function startProcess(
  file: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
  ready: RegExp,
): Promise<StartedProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const fail = (why: string): void => {
      clearTimeout(timer);
      if (child.exitCode === null) child.kill('SIGKILL');
      reject(new Error(`'${[file, ...args].join(' ')}' ${why}:\n${out}`));
    };
    const timer = setTimeout(() => fail('did not get ready within 60 s'), 60_000);
    const onData = (d: Buffer): void => {
      out += d.toString();
      if (!ready.test(out)) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      resolve({ child, output: () => out });
    };
    const onExit = (code: number | null): void => fail(`exited early with ${code}`);
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', onExit);
  });
}

/** Sends `signal` unless the process already exited, and resolves with its exit code. */
export function stopProcess(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
    child.once('exit', (code) => resolve(code));
    child.kill(signal);
  });
}
