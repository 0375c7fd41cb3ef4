/**
 * @module What the NATS benchmarks share for their other processes: fixtures bundled to plain JavaScript
 * (run as a deployment runs them), a child process that speaks JSON lines, and the median and spread of
 * per-round ratios.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const root = new URL('..', import.meta.url).pathname;

/** A child process that prints JSON lines on stdout and takes them on stdin. */
export interface JsonChild {
  process: ChildProcess;
  /** The next line matching `match` (rejects after 30 s). */
  line(match: (l: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  /** Writes one JSON line to its stdin. */
  send(op: Record<string, unknown>): void;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it exited. */
  stop(): Promise<void>;
}

/** Starts `script` (through tsx unless it is `.mjs` or `nodeArgs` bring a loader) in the checkout. */
export function startJsonChild(
  script: string,
  args: string[],
  nodeArgs: string[] = [],
  graceMs = 3_000,
): JsonChild {
  const loader = nodeArgs.includes('--import') || script.endsWith('.mjs') ? [] : ['--import', 'tsx'];
  const proc = spawn(process.execPath, [...nodeArgs, ...loader, script, ...args], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const waiters: {
    match: (l: Record<string, unknown>) => boolean;
    resolve: (l: Record<string, unknown>) => void;
  }[] = [];
  createInterface({ input: proc.stdout! }).on('line', (text) => {
    let l: Record<string, unknown>;
    try {
      l = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return;
    }
    for (const w of [...waiters]) {
      if (w.match(l)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(l);
      }
    }
  });
  return {
    process: proc,
    line: (match) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${script}: no reply within 30 s`)), 30_000);
        waiters.push({
          match,
          resolve: (l) => {
            clearTimeout(timer);
            resolve(l);
          },
        });
      }),
    send: (op) => proc.stdin!.write(JSON.stringify(op) + '\n'),
    stop: async () => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Bundles fixture programs (paths from the checkout's root, by name) into plain ES modules with esbuild,
 * so the child processes run as a deployment would: no loader thread, no per-closure name helpers. In
 * the programs named in `installedNats` the NATS client stays an installed package loaded from
 * node_modules (the bundles sit in node_modules/.cache to find it), as in a deployment that installs
 * toolbus and `@nats-io/transport-node`: `NatsBus` checks the installed nats.js version before it uses
 * the client's internals (see `nats-internals.ts`), and a bundle that inlines nats.js takes the
 * public-API path.
 */
export async function bundleFixtures(
  entries: Readonly<Record<string, string>>,
  installedNats: readonly string[],
): Promise<{ files: Record<string, string>; remove: () => Promise<void> }> {
  const { build } = await import('esbuild');
  const cache = join(root, 'node_modules', '.cache');
  await mkdir(cache, { recursive: true });
  const dir = await mkdtemp(join(cache, 'toolbus-bench-'));
  const remove = (): Promise<void> => rm(dir, { recursive: true, force: true });
  const files: Record<string, string> = {};
  try {
    for (const [name, path] of Object.entries(entries)) {
      files[name] = join(dir, `${name}.mjs`);
      await build({
        entryPoints: [join(root, path)],
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        outfile: files[name],
        logLevel: 'silent',
        external: installedNats.includes(name) ? ['@nats-io/*'] : [],
        // Some dependencies are CommonJS and call require(). The alias keeps clear of modules that import
        // `createRequire` themselves (esbuild does not rename around banner text).
        banner: {
          js: "import { createRequire as __benchRequire } from 'node:module'; const require = __benchRequire(import.meta.url);",
        },
      });
    }
  } catch (error) {
    await remove();
    throw error;
  }
  return { files, remove };
}

/** The median of some numbers (the upper one of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
}

/** `median× (min–max)` of per-round ratios. */
export function ratioSpread(values: readonly number[]): string {
  return `${median(values).toFixed(2)}× (${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)})`;
}
