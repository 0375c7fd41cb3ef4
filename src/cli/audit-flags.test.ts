import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runMain, type InProcessRun } from '../../test/support/cli-in-process.js';
import { parseAuditFlags } from './audit-setup.js';
import { formatEntries } from './commands/audit.js';
import type { AuditEntry } from '../audit/index.js';

/** Runs the CLI in this process with no environment; what it printed and its exit code. */
const run = (argv: string[]): Promise<InProcessRun> => runMain(argv);

test('the audit flags of up: defaults, ages, megabytes; bad values and --no-audit with a tuning flag are usage errors (exit 2)', async () => {
  assert.deepEqual(parseAuditFlags({}), {
    enabled: true,
    recordArguments: false,
    maxAgeMs: 7 * 86_400_000,
    maxBytes: 100 * 1024 * 1024,
  });
  assert.deepEqual(parseAuditFlags({ 'audit-max-age': '12h', 'audit-max-mb': '0.5', 'audit-args': true }), {
    enabled: true,
    recordArguments: true,
    maxAgeMs: 12 * 3_600_000,
    maxBytes: 512 * 1024,
  });
  assert.equal(parseAuditFlags({ 'no-audit': true }).enabled, false);
  for (const [argv, message] of [
    [['up', '--audit-max-age', 'forever'], /--audit-max-age takes an age of at least 1s/],
    [['up', '--audit-max-mb', '0'], /--audit-max-mb takes a number of megabytes/],
    [['up', '--no-audit', '--audit-args'], /--audit-args tunes the audit log, which --no-audit turns off/],
    [['up', '--audit-arg'], /Unknown option '--audit-arg' \(did you mean '--audit-args'\?\)/],
  ] as const) {
    const result = await run([...argv]);
    assert.equal(result.code, 2, `${argv.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, message);
  }
});

test('toolbus audit: help, did-you-mean, and conflicting sources are usage errors (exit 2)', async () => {
  const help = await run(['audit', '--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^Usage: toolbus audit /);
  assert.match(help.stdout, /--since WHEN {7}only entries since then/);
  assert.match((await run(['--help'])).stdout, /audit +show the audit log/);
  for (const [argv, message] of [
    [['audit', '--limt', '3'], /Unknown option '--limt' \(did you mean '--limit'\?\)/],
    [['audit', '--limit', 'all'], /--limit must be a whole number from 1 to 10000, got 'all'/],
    [['audit', '--since', 'later'], /--since must be an age such as 30s/],
    [['audit', '--local', '--file', 'x.db'], /--local and --file name two audit logs/],
    [
      ['audit', '--nats', 'nats://127.0.0.1:1', '--url', 'http://127.0.0.1:1'],
      /--url is for reading through/,
    ],
    [['audit', 'tell-joke'], /unexpected argument 'tell-joke'/],
  ] as const) {
    const result = await run([...argv]);
    assert.equal(result.code, 2, `${argv.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, message);
    assert.match(result.stderr, /Run 'toolbus audit --help' for usage\./);
  }
});

test('the human output aligns its columns and shows control characters in names as ?', () => {
  const base: AuditEntry = {
    time: '2025-01-31T12:00:00.000Z',
    kind: 'call',
    caller: 'cli:token@127.0.0.1',
    user: 'alice',
    tool: 'tell-joke',
    callId: 'c1',
    outcome: 'ok',
    durationMs: 12.34,
    argsBytes: 16,
    argsSha256: '9d4eb70e28663ed68e5d4ad421514c2d6b787554c7b0352c483aca83ae46945d',
  };
  const text = formatEntries([
    base,
    { ...base, user: 'eve\u001b[2J', outcome: 'invalid-arguments', durationMs: 1500, args: '{"a":1}' },
    {
      ...base,
      kind: 'denied',
      tool: null,
      user: null,
      callId: null,
      outcome: 'unauthorized',
      caller: 'http:unauthenticated@127.0.0.1',
      durationMs: 0,
      argsBytes: 0,
      argsSha256: null,
      request: { method: 'GET', path: '/api/v1/tools', status: 401 },
    },
  ]);
  const lines = text.trimEnd().split('\n');
  assert.equal(lines.length, 4);
  const column = (name: string): number => lines[0]!.indexOf(name);
  assert.equal(lines[1]!.indexOf('tell-joke'), column('TOOL'));
  assert.equal(lines[2]!.indexOf('eve?[2J'), column('USER'));
  assert.match(lines[1]!, /12\.3ms {2}tell-joke/);
  assert.match(lines[2]!, / 1\.50s {2}tell-joke/);
  assert.match(lines[1]!, /16 B sha256:9d4eb70e2866$/);
  assert.match(lines[2]!, /sha256:9d4eb70e2866 "\{\\"a\\":1\}"$/);
  assert.match(
    lines[3]!,
    /unauthorized +- +- +- +http:unauthenticated@127\.0\.0\.1 +- +GET \/api\/v1\/tools \(401\)$/,
  );
  assert.ok(!text.includes('\u001b'), 'no escape character reaches the terminal');
});
