/**
 * @module Benchmark: `toolbus up` startup as a user runs the installed package (plain Node on the built
 * `dist/`), next to a minimal MCP server written with the official MCP SDK v2 (one tool, Streamable HTTP
 * on node:http, `bench/fixtures/minimal-mcp-server.mjs`). Each start is a child process in a fresh temp
 * `TOOLBUS_HOME`; the contenders are interleaved ABBA over several rounds after one untimed warm-up start
 * each. Time to healthy runs from spawn to the first HTTP 200 from the health URL, polled every
 * {@link POLL_MS} ms; RSS is the child's process tree {@link RSS_DELAY_MS} ms after that. One more,
 * instrumented start per contender counts the files it has loaded by then (ESM through a loader hook,
 * CommonJS from `require.cache`). Targets: `toolbus up` within 1.2× the minimal server's time to
 * healthy, and at most 75 MB RSS.
 *
 * Environment: `STARTUP_BENCH_ROUNDS` (default 6); `TOOLBUS_BENCH_DIST`, the `dist/` folder to measure
 * (default this checkout's); `TOOLBUS_BENCH_COMPARE_DIST`, other built packages' `dist/` folders (separated
 * like PATH) to measure in the same rounds, e.g. a build of the previous commit for an A/B.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchTable } from './harness.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MINIMAL_MCP_SERVER = join(ROOT, 'bench/fixtures/minimal-mcp-server.mjs');
/** How often the health URL is polled while a contender starts. */
const POLL_MS = 2;
/** How long after the first 200 the RSS is read (and the loaded files counted). */
const RSS_DELAY_MS = 500;
/** A start that is not healthy by then fails the bench. */
const START_TIMEOUT_MS = 30_000;
/** How long a stopped child may take to exit before it is killed. */
const STOP_TIMEOUT_MS = 5_000;
const DEFAULT_ROUNDS = 6;

interface Contender {
  name: string;
  /** Arguments to `node` for a start on `port`. */
  args(port: number): string[];
  healthPath: string;
}

interface Sample {
  healthyMs: number;
  /** CPU time (user + system) the child had used when it was first healthy; NaN where unknown. */
  cpuMs: number;
  rssBytes: number;
}

/** Files a process had loaded, by group. */
type FileCounts = Map<string, number>;

function packageVersion(name: string): string {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

function toolbusContender(name: string, dist: string, extra: string[] = []): Contender {
  return {
    name,
    args: (port) => [join(dist, 'cli/main.js'), 'up', '--port', String(port), ...extra],
    healthPath: '/api/v1/health',
  };
}

/** The newest modification time of a non-test `.ts` file under `dir`. */
function newestSourceMs(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSourceMs(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) {
      newest = Math.max(newest, statSync(path).mtimeMs);
    }
  }
  return newest;
}

/** A free loopback port (the contender binds it a moment later). */
function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** One GET; resolves with the status, or undefined when nothing answers yet. */
function probe(url: string): Promise<number | undefined> {
  return new Promise((resolveStatus) => {
    const req = request(url, { agent: false, timeout: 1_000 }, (res) => {
      res.resume();
      resolveStatus(res.statusCode);
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => resolveStatus(undefined));
    req.end();
  });
}

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** RSS of `pid` and all its descendants, from `ps` (works on Linux and macOS). */
function treeRss(pid: number): number {
  const rows = execFileSync('ps', ['-A', '-o', 'pid=,ppid=,rss='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number));
  let total = 0;
  const pending = [pid];
  while (pending.length > 0) {
    const current = pending.pop();
    for (const [p, ppid, rssKb] of rows) {
      if (p === current) total += (rssKb ?? 0) * 1024;
      if (ppid === current && p !== undefined) pending.push(p);
    }
  }
  return total;
}

/** Clock ticks per second of /proc/<pid>/stat, or undefined off Linux. */
function clockTicks(): number | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

/** User + system CPU ms of `pid` from /proc (Linux), else NaN. */
function cpuMs(pid: number, ticks: number | undefined): number {
  if (ticks === undefined) return NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of stat(5) (utime, stime), counted here from field 3 (state).
    return ((Number(fields[11]) + Number(fields[12])) / ticks) * 1000;
  } catch {
    return NaN;
  }
}

/** The environment of a default start: no model, no NATS, no token or allowlist from the caller. */
function childEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!/^(TOOLBUS_|OPENAI_|SAPTIVA_|NODE_OPTIONS$)/.test(name)) env[name] = value;
  }
  return { ...env, TOOLBUS_HOME: home };
}

// A loader hook (it runs on Node's hooks thread) that appends every file URL loaded as ESM to a log, and
// a preload that writes `require.cache` (CommonJS) to a second log on SIGUSR2.
const HOOK = `
import { appendFileSync } from 'node:fs';
let log;
export function initialize(data) { log = data.log; }
export async function load(url, context, next) {
  if (url.startsWith('file:')) appendFileSync(log, url + '\\n');
  return next(url, context);
}`;
function preload(esmLog: string, cjsLog: string): string {
  const code = `
import { register, createRequire } from 'node:module';
import { renameSync, writeFileSync } from 'node:fs';
register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOK)}`)}, { data: { log: ${JSON.stringify(esmLog)} } });
const cache = createRequire(process.cwd() + '/').cache;
process.on('SIGUSR2', () => {
  writeFileSync(${JSON.stringify(cjsLog + '.tmp')}, Object.keys(cache).join('\\n'));
  renameSync(${JSON.stringify(cjsLog + '.tmp')}, ${JSON.stringify(cjsLog)});
});`;
  return `data:text/javascript,${encodeURIComponent(code)}`;
}

/** Groups loaded files: `toolbus` (outside node_modules), else the package name. */
function countFiles(paths: Iterable<string>): FileCounts {
  const counts: FileCounts = new Map();
  for (const path of paths) {
    const match = /[/\\]node_modules[/\\]((?:@[^/\\]+[/\\])?[^/\\]+)/.exec(path);
    const group = match?.[1]?.replace('\\', '/') ?? 'toolbus';
    counts.set(group, (counts.get(group) ?? 0) + 1);
  }
  return counts;
}

function describeCounts(counts: FileCounts): string {
  let total = 0;
  let mcp = 0;
  for (const [group, n] of counts) {
    total += n;
    if (group.startsWith('@modelcontextprotocol/')) mcp += n;
  }
  const other = total - (counts.get('toolbus') ?? 0) - (counts.get('zod') ?? 0) - mcp;
  return `${total} (toolbus ${counts.get('toolbus') ?? 0}, zod ${counts.get('zod') ?? 0}, MCP SDK ${mcp}, other ${other})`;
}

const median = (xs: readonly number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const spread = (xs: readonly number[], scale: number, digits: number): string =>
  `${(Math.min(...xs) / scale).toFixed(digits)}–${(Math.max(...xs) / scale).toFixed(digits)}`;

export default async function (): Promise<BenchTable[]> {
  const dist = resolve(process.env.TOOLBUS_BENCH_DIST ?? join(ROOT, 'dist'));
  if (!existsSync(join(dist, 'cli/main.js'))) {
    process.stdout.write(
      `\n## Startup: skipped\n\n${join(dist, 'cli/main.js')} is missing: run \`npm run build\` first ` +
        '(the bench times the built package, as a user runs it).\n',
    );
    return [];
  }
  const rounds = Number(process.env.STARTUP_BENCH_ROUNDS ?? DEFAULT_ROUNDS);
  const notes: string[] = [];
  if (
    !process.env.TOOLBUS_BENCH_DIST &&
    newestSourceMs(join(ROOT, 'src')) > statSync(join(dist, 'cli/main.js')).mtimeMs
  ) {
    notes.push('Warning: src/ has changes newer than dist/cli/main.js; run `npm run build` to time them.');
  }

  const sdk = `@modelcontextprotocol/server ${packageVersion('@modelcontextprotocol/server')} + /node ${packageVersion('@modelcontextprotocol/node')}`;
  const BASELINE = `minimal MCP server (SDK ${sdk}, Streamable HTTP, 1 tool, node:http)`;
  const contenders: Contender[] = [
    toolbusContender('toolbus up (node dist/cli/main.js)', dist),
    toolbusContender('toolbus up --no-examples', dist, ['--no-examples']),
    { name: BASELINE, args: (port) => [MINIMAL_MCP_SERVER, String(port)], healthPath: '/health' },
  ];
  const compare = (process.env.TOOLBUS_BENCH_COMPARE_DIST ?? '').split(delimiter).filter((d) => d !== '');
  contenders.splice(1, 0, ...compare.map((d) => toolbusContender(`toolbus up (${resolve(d)})`, resolve(d))));

  const ticks = clockTicks();
  const running = new Set<ChildProcess>();
  const killAll = (): void => {
    for (const child of running) child.kill('SIGKILL');
  };
  process.once('exit', killAll); // a failed run must not leave servers behind

  async function stop(child: ChildProcess): Promise<void> {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((done) => child.once('exit', () => done()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    }
    running.delete(child);
  }

  /** One start: time to healthy and RSS; with `logs`, the loaded files too. */
  async function start(
    contender: Contender,
    logs?: { esm: string; cjs: string },
  ): Promise<Sample & { files?: FileCounts }> {
    const port = await freePort();
    const home = mkdtempSync(join(tmpdir(), 'toolbus-startup-'));
    const url = `http://127.0.0.1:${port}${contender.healthPath}`;
    const nodeArgs = logs ? ['--import', preload(logs.esm, logs.cjs)] : [];
    let stderr = '';
    const t0 = performance.now();
    const child = spawn(process.execPath, [...nodeArgs, ...contender.args(port)], {
      cwd: home,
      env: childEnv(home),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    running.add(child);
    child.stderr?.on('data', (chunk: Buffer) => void (stderr = (stderr + String(chunk)).slice(-2_000)));
    try {
      let healthyMs: number | undefined;
      let cpu = NaN;
      while (healthyMs === undefined) {
        if ((await probe(url)) === 200) {
          healthyMs = performance.now() - t0;
          cpu = cpuMs(child.pid!, ticks);
        } else if (child.exitCode !== null || child.signalCode !== null) {
          throw new Error(
            `${contender.name} exited (${child.exitCode ?? child.signalCode}) before healthy: ${stderr}`,
          );
        } else if (performance.now() - t0 > START_TIMEOUT_MS) {
          throw new Error(`${contender.name} was not healthy within ${START_TIMEOUT_MS} ms: ${stderr}`);
        } else await sleep(POLL_MS);
      }
      await sleep(RSS_DELAY_MS);
      const rssBytes = treeRss(child.pid!);
      if (!logs) return { healthyMs, cpuMs: cpu, rssBytes };
      child.kill('SIGUSR2');
      const deadline = performance.now() + 5_000;
      while (!existsSync(logs.cjs) && performance.now() < deadline) await sleep(10);
      if (!existsSync(logs.cjs)) throw new Error(`${contender.name} did not list its CommonJS modules`);
      const files = new Set<string>();
      for (const line of readFileSync(logs.esm, 'utf8').split('\n')) if (line) files.add(fileURLToPath(line));
      for (const line of readFileSync(logs.cjs, 'utf8').split('\n')) if (line) files.add(line);
      return { healthyMs, cpuMs: cpu, rssBytes, files: countFiles(files) };
    } finally {
      await stop(child);
      rmSync(home, { recursive: true, force: true });
    }
  }

  const loadAtStart = loadavg().map((x) => x.toFixed(2));
  const samples = new Map<Contender, Sample[]>(contenders.map((c) => [c, []]));
  for (const contender of contenders) await start(contender); // warm the disk cache, untimed
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? contenders : [...contenders].reverse();
    for (const contender of order) samples.get(contender)!.push(await start(contender));
  }
  const files = new Map<Contender, FileCounts>();
  const logDir = mkdtempSync(join(tmpdir(), 'toolbus-startup-files-'));
  try {
    for (const [i, contender] of contenders.entries()) {
      const logs = { esm: join(logDir, `${i}.esm`), cjs: join(logDir, `${i}.cjs`) };
      files.set(contender, (await start(contender, logs)).files!);
    }
  } finally {
    rmSync(logDir, { recursive: true, force: true });
    process.off('exit', killAll);
  }

  const baseline = contenders.find((c) => c.name === BASELINE)!;
  const baseMs = median(samples.get(baseline)!.map((s) => s.healthyMs));
  const baseRss = median(samples.get(baseline)!.map((s) => s.rssBytes));
  const baseCpu = median(samples.get(baseline)!.map((s) => s.cpuMs));
  const MB = 1024 * 1024;
  const lines = [
    `\n## Startup: spawn → first 200 from the health URL (${rounds} ABBA rounds, polled every ${POLL_MS} ms)\n`,
    '| contender | time to healthy ms (median) | min–max | ÷ minimal MCP | CPU ms to healthy | ÷ minimal MCP | RSS MB (median) | min–max | ÷ minimal MCP | files loaded |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const contender of contenders) {
    const ms = samples.get(contender)!.map((s) => s.healthyMs);
    const rss = samples.get(contender)!.map((s) => s.rssBytes);
    const cpu = samples.get(contender)!.map((s) => s.cpuMs);
    lines.push(
      `| ${contender.name} | ${median(ms).toFixed(0)} | ${spread(ms, 1, 0)} | ${(median(ms) / baseMs).toFixed(2)} | ` +
        `${median(cpu).toFixed(0)} | ${(median(cpu) / baseCpu).toFixed(2)} | ` +
        `${(median(rss) / MB).toFixed(1)} | ${spread(rss, MB, 1)} | ${(median(rss) / baseRss).toFixed(2)} | ` +
        `${describeCounts(files.get(contender)!)} |`,
    );
  }
  lines.push(
    '',
    `Targets: toolbus up ≤ 1.2× the minimal MCP server's time to healthy, ≤ 75 MB RSS (process tree, ` +
      `${RSS_DELAY_MS} ms after healthy). CPU: user + system time of the child when first healthy ` +
      '(Linux /proc; less sensitive to a busy machine than the wall time). ' +
      'Files loaded: ESM and CommonJS, at the same moment. ' +
      `Load average ${loadAtStart.join(' ')} at start, ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')} at end.`,
    ...notes,
  );
  process.stdout.write(lines.join('\n') + '\n');
  return [];
}
