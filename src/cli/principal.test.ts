import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteConfigStore } from '../config/sqlite/index.js';
import { hashToken } from '../policy/index.js';
import { runMain, type InProcessRun } from '../../test/support/cli-in-process.js';

const root = mkdtempSync(join(tmpdir(), 'toolbus-principal-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** A stored token hash (a problem message may name the 'sha256:' prefix, never a digest). */
const HASH = /sha256:[A-Za-z0-9_-]{43}/;

type Run = InProcessRun;

/** Runs `toolbus <argv>` in-process with TOOLBUS_HOME set to `home`. */
function toolbus(home: string, argv: string[]): Promise<Run> {
  return runMain(argv, { env: { TOOLBUS_HOME: home }, cwd: root });
}

/** Every byte the store wrote (the database and its journal files), as text. */
function storeBytes(home: string): string {
  return readdirSync(home)
    .filter((f) => f.startsWith('config.db'))
    .map((f) => readFileSync(join(home, f)).toString('latin1'))
    .join('\n');
}

async function readItem(home: string, name: string): Promise<Record<string, unknown> | undefined> {
  const store = new SqliteConfigStore({ path: join(home, 'config.db') });
  try {
    return (await store.get('principal', name))?.value as Record<string, unknown> | undefined;
  } finally {
    await store.close();
  }
}

describe('toolbus principal', () => {
  const home = join(root, 'home');

  test('add prints a token once; the store keeps only its hash', async () => {
    const run = await toolbus(home, [
      'principal',
      'add',
      'ci-bot',
      '--role',
      'caller',
      '--role',
      'approver,impersonate',
      '--user',
      'alice',
      '--tools',
      'tell-*,get-*',
      '--rate',
      '20/s',
      '--burst',
      '40',
      '--max-in-flight',
      '4',
    ]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^tbk_[A-Za-z0-9_-]{43}\n$/);
    const token = run.stdout.trim();
    assert.match(run.stderr, /store its token now: toolbus keeps only its hash/i);
    assert.ok(!run.stderr.includes(token), 'the token is printed on stdout only');
    const item = await readItem(home, 'ci-bot');
    assert.ok(item);
    assert.equal(item['tokenHash'], hashToken(token));
    assert.deepEqual(item['roles'], ['caller', 'approver', 'impersonate']);
    assert.equal(item['user'], 'alice');
    assert.deepEqual(item['tools'], ['tell-*', 'get-*']);
    assert.equal(item['rate'], '20/s');
    assert.equal(item['burst'], 40);
    assert.equal(item['maxInFlight'], 4);
    assert.ok(!Number.isNaN(Date.parse(String(item['created']))));
    assert.ok(!storeBytes(home).includes(token), 'no token text anywhere in the store');
    assert.ok(!storeBytes(home).includes(token.slice(4)), 'not even without its prefix');
  });

  test('a second add of the same name fails; --force replaces it with a new hash', async () => {
    const before = await readItem(home, 'ci-bot');
    const again = await toolbus(home, ['principal', 'add', 'ci-bot', '--role', 'caller']);
    assert.equal(again.code, 1);
    assert.equal(again.stdout, '', 'no token for a principal that was not stored');
    assert.match(
      again.stderr,
      /principal 'ci-bot' exists: remove it first, or --force to replace it \(its old token stops working\)/,
    );
    assert.deepEqual(await readItem(home, 'ci-bot'), before);

    const forced = await toolbus(home, ['principal', 'add', 'ci-bot', '--role', 'caller', '--force']);
    assert.equal(forced.code, 0, forced.stderr);
    const token = forced.stdout.trim();
    assert.match(token, /^tbk_/);
    assert.match(forced.stderr, /replaced principal 'ci-bot'/);
    const after = await readItem(home, 'ci-bot');
    assert.equal(after?.['tokenHash'], hashToken(token));
    assert.notEqual(after?.['tokenHash'], before?.['tokenHash']);
    assert.deepEqual(after?.['roles'], ['caller']);
    assert.equal(after?.['user'], undefined, 'the old settings are gone');
  });

  test('add --json gives the token and the settings, not the hash', async () => {
    const run = await toolbus(home, ['principal', 'add', 'ops', '--role', 'admin', '--json']);
    assert.equal(run.code, 0, run.stderr);
    const out = JSON.parse(run.stdout) as Record<string, unknown>;
    assert.equal(out['name'], 'ops');
    assert.match(String(out['token']), /^tbk_/);
    assert.deepEqual(out['roles'], ['admin']);
    assert.equal(out['tokenHash'], undefined);
    assert.doesNotMatch(run.stdout, HASH);
    assert.equal((await readItem(home, 'ops'))?.['tokenHash'], hashToken(String(out['token'])));
  });

  test('list shows roles, user and settings, never the hash; a malformed item with its problem', async () => {
    const put = await toolbus(home, [
      'config',
      'put',
      'principal/broken',
      '{"roles":["caller"],"tokenHash":"nope"}',
      '--force',
    ]);
    assert.equal(put.code, 0, put.stderr);
    await toolbus(home, ['principal', 'add', 'sup', '--role', 'caller', '--user', 'bob', '--rate', '5/m']);

    const list = await toolbus(home, ['principal', 'list']);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^NAME +ROLES +USER +TOOLS +RATE +MAX-IN-FLIGHT +CREATED$/m);
    assert.match(list.stdout, /^ci-bot +caller +ci-bot +- +- +- +\d{4}-/m);
    assert.match(list.stdout, /^ops +admin +ops /m);
    assert.match(list.stdout, /^sup +caller +bob +- +5\/m /m);
    assert.match(list.stdout, /^broken +\(not usable: 'tokenHash' must be/m);
    assert.doesNotMatch(list.stdout, HASH);
    assert.ok(!list.stdout.includes('tbk_'));

    const json = await toolbus(home, ['principal', 'list', '--json']);
    assert.equal(json.code, 0, json.stderr);
    const rows = JSON.parse(json.stdout) as Record<string, unknown>[];
    assert.deepEqual(
      rows.map((r) => r['name']),
      ['broken', 'ci-bot', 'ops', 'sup'],
    );
    assert.match(String(rows[0]!['problem']), /tokenHash/);
    assert.deepEqual(rows[3]!['roles'], ['caller']);
    assert.equal(rows[3]!['user'], 'bob');
    assert.equal(rows[3]!['rate'], '5/m');
    assert.doesNotMatch(json.stdout, HASH);
    assert.ok(rows.every((r) => !('tokenHash' in r) && !('token' in r)));
  });

  test('remove deletes; an unknown name fails with exit 1 and a suggestion', async () => {
    const removed = await toolbus(home, ['principal', 'remove', 'sup']);
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stdout, /removed principal 'sup'/);
    assert.equal(await readItem(home, 'sup'), undefined);

    const json = await toolbus(home, ['principal', 'remove', 'broken', '--json']);
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), { name: 'broken', removed: true });

    const unknown = await toolbus(home, ['principal', 'remove', 'ci-bto']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /principal 'ci-bto' not found \(did you mean 'ci-bot'\?\)/);
  });

  test('list and remove on a home without a config file create none', async () => {
    const empty = join(root, 'empty');
    const list = await toolbus(empty, ['principal', 'list', '--json']);
    assert.equal(list.code, 0, list.stderr);
    assert.deepEqual(JSON.parse(list.stdout), []);
    const remove = await toolbus(empty, ['principal', 'remove', 'x']);
    assert.equal(remove.code, 1);
    assert.match(remove.stderr, /there are no principals yet/);
    assert.throws(() => readdirSync(empty), /ENOENT/);
  });

  test('bad usage exits 2 naming what is expected, and stores nothing', async () => {
    const cases: [string[], RegExp][] = [
      [
        ['add', 'x', '--role', 'calller'],
        /unknown role 'calller' \(did you mean 'caller'\?\): --role takes admin, caller, approver, impersonate/,
      ],
      [['add', 'x'], /missing --role: give one or more of admin, caller, approver, impersonate/],
      [
        ['add', 'x', '--role', 'caller', '--rate', 'fast'],
        /--rate: rate 'fast' is not a rate: expected N\/s, N\/m, N\/h or N\/d/,
      ],
      [['add', 'x', '--role', 'caller', '--burst', '3'], /--burst needs --rate/],
      [['add', 'x', '--role', 'caller', '--rate', '1/s', '--burst', '0'], /--burst must be a number ≥ 1/],
      [
        ['add', 'x', '--role', 'caller', '--max-in-flight', '1.5'],
        /--max-in-flight must be a whole number ≥ 1, got '1.5'/,
      ],
      [
        ['add', 'x', '--role', 'caller', '--max-in-flight', '0'],
        /--max-in-flight must be a whole number ≥ 1/,
      ],
      [['add', 'x', '--role', 'caller', '--tools', ','], /--tools needs one or more globs/],
      [['add', 'a b', '--role', 'caller'], /principal name 'a b' must be 1–64 letters, digits/],
      [['add', 'admin', '--role', 'caller'], /'admin' is the default token's principal/],
      [['add', '--role', 'caller'], /missing name: add NAME/],
      [['list', '--role', 'caller'], /--role applies to add, not to list/],
      [['lst'], /unknown action 'lst' \(did you mean 'list'\?\)/],
      [[], /missing action: expected add, list or remove/],
    ];
    for (const [argv, expected] of cases) {
      const run = await toolbus(home, ['principal', ...argv]);
      assert.equal(run.code, 2, `${argv.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, expected, argv.join(' '));
      assert.match(run.stderr, /Run 'toolbus principal --help' for usage/);
      assert.equal(run.stdout, '', `${argv.join(' ')} prints no token`);
    }
    assert.equal(await readItem(home, 'x'), undefined);
  });

  test('--help explains roles, the default token, quotas and how to use a token', async () => {
    const run = await toolbus(home, ['principal', '--help']);
    assert.equal(run.code, 0);
    for (const text of [
      'admin',
      'caller',
      'approver',
      'impersonate',
      'X-Toolbus-User',
      "the token of 'toolbus up'",
      'quota/TOOL',
      'role/NAME',
      '"per": "all"',
      'curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8888/api/v1/tools',
    ]) {
      assert.ok(run.stdout.toLowerCase().includes(text.toLowerCase()), `help mentions ${text}`);
    }
    const top = await toolbus(home, ['--help']);
    assert.match(top.stdout, /principal +add, list and remove API keys \(principals\)/);
  });

  test('config put checks role, quota and principal items as the gateway reads them', async () => {
    const role = await toolbus(home, ['config', 'put', 'role/caller', '{"tools":5}']);
    assert.equal(role.code, 1);
    assert.match(
      role.stderr,
      /role\/caller would not go live: .*'tools' must be a list of non-empty strings/,
    );
    const quota = await toolbus(home, ['config', 'put', 'quota/tell-joke', '{"burst":3}']);
    assert.equal(quota.code, 1);
    assert.match(quota.stderr, /'rate' is required/);
    const perAll = await toolbus(home, [
      'config',
      'put',
      'quota/tell-joke',
      '{"rate":"5/s","per":"everyone"}',
    ]);
    assert.equal(perAll.code, 1);
    assert.match(perAll.stderr, /'per' must be 'principal' or 'all'/);
    const principal = await toolbus(home, [
      'config',
      'put',
      'principal/p',
      '{"roles":["root"],"tokenHash":"x"}',
    ]);
    assert.equal(principal.code, 1);
    assert.match(principal.stderr, /principal\/p would not go live/);

    const good = await toolbus(home, ['config', 'put', 'role/caller', '{"tools":["tell-*"],"rate":"20/s"}']);
    assert.equal(good.code, 0, good.stderr);
    const quotaOk = await toolbus(home, [
      'config',
      'put',
      'quota/tell-joke',
      '{"rate":"5/s","burst":10,"per":"all"}',
    ]);
    assert.equal(quotaOk.code, 0, quotaOk.stderr);
    const typo = await toolbus(home, ['config', 'put', 'role/calller', '{"maxInFlight":2}']);
    assert.equal(typo.code, 0, typo.stderr);
    assert.match(typo.stderr, /warning: role\/calller: 'calller' is not a role \(did you mean 'caller'\?\)/);
  });
});
