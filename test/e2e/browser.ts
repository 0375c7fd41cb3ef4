/**
 * Helpers of the web console's end-to-end tests and screenshot script: a built console, a real
 * `toolbus up` in a temporary home with a known token, and Debian's Chromium driven by playwright-core
 * with a fresh profile.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { chromium, type BrowserContext } from 'playwright-core';
import { ROOT, interrupt, startCli, type StartedCli } from '../support/cli.js';

/** Where Debian installs Chromium (`apt-get install chromium`). */
export const CHROMIUM = '/usr/bin/chromium';

/** The token the test gateway requires. */
export const TOKEN = 'console-e2e-token-0123456789';

/** Chromium's flags: headless, no sandbox (root in CI), nothing that reaches the network by itself. */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** The newest modification time of the files under `dir`, in ms. */
async function newest(dir: string): Promise<number> {
  let latest = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) latest = Math.max(latest, (await stat(join(entry.parentPath, entry.name))).mtimeMs);
  }
  return latest;
}

/**
 * Writes `dist/console/` (what `toolbus up` serves) when it is missing or older than the console's
 * sources (`npm run build` wrote it, and nothing changed since, on CI).
 */
export async function buildConsole(): Promise<void> {
  const built = join(ROOT, 'dist/console/console.js');
  if (existsSync(built) && (await stat(built)).mtimeMs >= (await newest(join(ROOT, 'console')))) return;
  await promisify(execFile)(process.execPath, [join(ROOT, 'scripts/build-console.mjs')], { cwd: ROOT });
}

/** A running `toolbus up` and its home. */
export interface Gateway {
  url: string;
  home: string;
  up: StartedCli;
  /** Stops `toolbus up` (Ctrl-C, then SIGKILL after 10 s) and removes its home. */
  stop(): Promise<void>;
}

/**
 * Starts `toolbus up` on a free port in a fresh home, with {@link TOKEN} and a scripted model whose
 * steps are `script` (see src/cli/model-from-env.ts).
 */
export async function startGateway(script: unknown[]): Promise<Gateway> {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-console-e2e-'));
  const model = join(home, 'model.json');
  await writeFile(model, JSON.stringify(script));
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TOOLBUS_HOME: home,
    TOOLBUS_TOKEN: TOKEN,
    TOOLBUS_SCRIPTED_MODEL: model,
  };
  let up: StartedCli;
  try {
    up = await startCli(['up', '--port', '0'], env, /Press Ctrl-C to stop\./);
  } catch (error) {
    await rm(home, { recursive: true, force: true });
    throw error;
  }
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())?.[1];
  const stop = async (): Promise<void> => {
    const killer = setTimeout(() => up.child.kill('SIGKILL'), 10_000);
    await interrupt(up.child);
    clearTimeout(killer);
    await rm(home, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  };
  if (!url) {
    await stop();
    throw new Error(`no gateway URL in the banner of toolbus up:\n${up.output()}`);
  }
  return { url, home, up, stop };
}

/** A Chromium with a fresh profile (removed on close). */
export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Launches Chromium headless with a fresh profile, light theme unless asked. */
export async function launchBrowser(
  options: { colorScheme?: 'light' | 'dark'; width?: number; height?: number } = {},
): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium`);
  const profile = await mkdtemp(join(tmpdir(), 'toolbus-console-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
    colorScheme: options.colorScheme ?? 'light',
    viewport: { width: options.width ?? 1280, height: options.height ?? 800 },
    timeout: 30_000,
  });
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      await rm(profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    },
  };
}
