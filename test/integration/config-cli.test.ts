import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer } from '../support/nats-server.js';

const root = mkdtempSync(join(tmpdir(), 'toolbus-config-cli-'));
after(() => rmSync(root, { recursive: true, force: true }));
const mainTs = new URL('../../src/cli/main.ts', import.meta.url).pathname;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `toolbus config ...` as a child process with TOOLBUS_HOME set to `home`. */
function toolbus(home: string, args: string[], stdin?: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', mainTs, 'config', ...args], {
      cwd: new URL('../..', import.meta.url).pathname, // where tsx resolves
      env: { ...process.env, TOOLBUS_HOME: home, TOOLBUS_NATS: '' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
}

const jokeService = {
  id: 'joke-service',
  'request-queue': 'non-persistent://tg/request/joke',
  'response-queue': 'non-persistent://tg/response/joke',
  'config-params': [{ name: 'style', required: false }],
};
const tellJoke = {
  type: 'tool-service',
  name: 'tell-joke',
  description: 'Tell a joke',
  service: 'joke-service',
  style: 'pun',
  arguments: [{ name: 'topic', type: 'string', description: 'what about' }],
};

describe('toolbus config (child process)', () => {
  const home = join(root, 'home');

  test("the seed's syntax: put TYPE/KEY < file, then get and list", async () => {
    const file = join(root, 'joke-service.json');
    writeFileSync(file, JSON.stringify(jokeService, null, 2));
    const put = await toolbus(home, ['put', 'tool-service/joke-service'], JSON.stringify(jokeService));
    assert.equal(put.code, 0, put.stderr);
    assert.match(put.stdout, /put tool-service\/joke-service \(revision \d+\)/);
    const get = await toolbus(home, ['get', 'tool-service/joke-service']);
    assert.equal(get.code, 0, get.stderr);
    assert.deepEqual(JSON.parse(get.stdout), jokeService);
  });

  test("TrustGraph's syntax: --type --key --stdin and --value; list --json", async () => {
    const a = await toolbus(
      home,
      ['put', '--type', 'tool', '--key', 'tell-joke', '--stdin'],
      JSON.stringify(tellJoke),
    );
    assert.equal(a.code, 0, a.stderr);
    const b = await toolbus(home, [
      'put',
      '--type',
      'prompt',
      '--key',
      'greet',
      '--value',
      '{"template":"Hi {{name}}"}',
    ]);
    assert.equal(b.code, 0, b.stderr);
    const list = await toolbus(home, ['list', '--json']);
    assert.equal(list.code, 0, list.stderr);
    const items = JSON.parse(list.stdout) as { type: string; key: string; revision: number }[];
    assert.deepEqual(
      items.map((i) => `${i.type}/${i.key}`),
      ['prompt/greet', 'tool/tell-joke', 'tool-service/joke-service'],
    );
    const listTool = await toolbus(home, ['list', 'tool']);
    assert.match(listTool.stdout, /^tool\/tell-joke\s+revision \d+\n$/);
    const getJson = await toolbus(home, ['get', '--type', 'tool', '--key', 'tell-joke', '--json']);
    assert.deepEqual((JSON.parse(getJson.stdout) as { value: unknown }).value, tellJoke);
  });

  test('delete, then get of the deleted item exits 1 saying it is not found', async () => {
    const del = await toolbus(home, ['delete', 'prompt/greet']);
    assert.equal(del.code, 0, del.stderr);
    assert.match(del.stdout, /deleted prompt\/greet/);
    const get = await toolbus(home, ['get', 'prompt/greet']);
    assert.equal(get.code, 1);
    assert.match(get.stderr, /item 'prompt\/greet' not found/);
  });

  test('a file saved with a UTF-8 byte-order mark (Windows editors) is accepted', async () => {
    const put = await toolbus(home, ['put', 'prompt/bom'], '\uFEFF' + JSON.stringify({ template: 'Hi' }));
    assert.equal(put.code, 0, put.stderr);
    assert.deepEqual(JSON.parse((await toolbus(home, ['get', 'prompt/bom'])).stdout), { template: 'Hi' });
  });

  test('put refuses (exit 1, nothing stored) an item the registry would skip, unless --force; warnings store it', async () => {
    const h = join(root, 'check-home');
    const notObject = await toolbus(h, ['put', 'tool/a', '"hello"']);
    assert.equal(notObject.code, 1);
    assert.match(notObject.stderr, /error: tool\/a would not go live: .*'type' names a tool type/);
    assert.match(notObject.stderr, /Nothing was stored\. .*--force/);
    assert.equal((await toolbus(h, ['get', 'tool/a'])).code, 1, 'nothing stored');
    const typo = await toolbus(h, ['put', 'tool/typo', JSON.stringify({ ...tellJoke, type: 'tool-servce' })]);
    assert.equal(typo.code, 1);
    assert.match(typo.stderr, /unknown tool type 'tool-servce' \(did you mean 'tool-service'\?\)/);
    const forced = await toolbus(h, ['put', 'tool/a', '"hello"', '--force']);
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(forced.stderr, /warning: tool\/a stored with --force, but it will not go live/);
    assert.equal(JSON.parse((await toolbus(h, ['get', 'tool/a'])).stdout), 'hello');
    const early = await toolbus(h, ['put', 'tool/tell-joke', JSON.stringify(tellJoke)]);
    assert.equal(early.code, 0, early.stderr);
    assert.match(
      early.stderr,
      /warning: .*no item 'tool-service\/joke-service' yet; the tool goes live once/,
    );
    const service = { ...jokeService, 'config-params': [{ name: 'style', required: true }] };
    const put = await toolbus(h, ['put', 'tool-service/joke-service', JSON.stringify(service)]);
    assert.deepEqual([put.code, put.stderr], [0, '']);
    const { style: _style, ...noStyle } = tellJoke;
    const missing = await toolbus(h, ['put', 'tool/tell-joke', JSON.stringify(noStyle)]);
    assert.equal(missing.code, 1);
    assert.match(
      missing.stderr,
      /error: tool\/tell-joke would not go live: .*missing required config param 'style'/,
    );
    const good = await toolbus(h, ['put', 'tool/tell-joke', JSON.stringify(tellJoke)]);
    assert.deepEqual([good.code, good.stderr], [0, '']);
    // A service change that breaks the tools already using it says which, and is stored: the
    // service itself is fine (a running registry keeps the tool's last good version).
    const stricter = {
      ...service,
      'config-params': [...service['config-params'], { name: 'lang', required: true }],
    };
    const broke = await toolbus(h, ['put', 'tool-service/joke-service', JSON.stringify(stricter)]);
    assert.equal(broke.code, 0, broke.stderr);
    assert.match(broke.stderr, /warning: .*tool\/tell-joke, which uses this service, .*'lang'/);
    const deleted = await toolbus(h, ['delete', 'tool-service/joke-service']);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.match(deleted.stderr, /warning: tool\/tell-joke uses this service and leaves the registry/);
    const badService = await toolbus(h, ['put', 'tool-service/bad', '{"request-queue":"x y"}']);
    assert.equal(badService.code, 1);
    assert.match(badService.stderr, /error: tool-service\/bad would not go live: .*'request-queue'/);
  });

  test('bad JSON exits 1 with the line and column of the error', async () => {
    const r = await toolbus(home, ['put', 'tool/broken'], '{\n  "name": "x",\n  "type": \n}');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /invalid JSON at line 4, column 1 \(position 28\)/);
    assert.match(r.stderr, /Fix the JSON/);
  });

  test('usage errors exit 2 and say how to fix them: unknown type, missing key, unknown action', async () => {
    // Independent runs, in parallel to keep the suite fast.
    const [unknownType, anyType, missingKey, missingKeyFlag, action, flag] = await Promise.all([
      toolbus(home, ['put', 'tools/x', '{}']),
      toolbus(home, ['put', 'custom/x', '{}', '--any-type']),
      toolbus(home, ['put', 'tool-service'], '{}'),
      toolbus(home, ['get', '--type', 'tool']),
      toolbus(home, ['frobnicate']),
      toolbus(home, ['list', '--bogus']),
    ]);
    assert.equal(unknownType.code, 2);
    assert.match(unknownType.stderr, /unknown config type 'tools' \(did you mean 'tool'\?\)/);
    assert.match(unknownType.stderr, /--any-type/);
    assert.equal(anyType.code, 0, anyType.stderr);
    assert.equal(missingKey.code, 2);
    assert.match(
      missingKey.stderr,
      /missing key in 'tool-service': write TYPE\/KEY, e\.g\. tool-service\/my-item/,
    );
    assert.equal(missingKeyFlag.code, 2);
    assert.match(missingKeyFlag.stderr, /missing key: pass --key K/);
    assert.equal(action.code, 2);
    assert.match(action.stderr, /unknown action 'frobnicate'/);
    assert.equal(flag.code, 2);
  });

  test('a flag the action does not use is a usage error, not silently ignored', async () => {
    const r = await toolbus(home, ['get', 'tool/tell-joke', '--if-revision', '1']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--if-revision applies to put and delete, not to get/);
    const l = await toolbus(home, ['list', '--value', '{}']);
    assert.equal(l.code, 2);
    assert.match(l.stderr, /--value applies to put, not to list/);
  });

  test('--if-revision: a stale revision exits 1 with config-conflict advice', async () => {
    const get = await toolbus(home, ['get', 'tool/tell-joke', '--json']);
    const { revision } = JSON.parse(get.stdout) as { revision: number };
    const ok = await toolbus(
      home,
      ['put', 'tool/tell-joke', '--if-revision', String(revision)],
      JSON.stringify(tellJoke),
    );
    assert.equal(ok.code, 0, ok.stderr);
    const stale = await toolbus(
      home,
      ['put', 'tool/tell-joke', '--if-revision', String(revision)],
      JSON.stringify(tellJoke),
    );
    assert.equal(stale.code, 1);
    assert.match(stale.stderr, /is at revision \d+, not \d+/);
  });

  test('--store PATH picks the file; a corrupt file exits 1 naming it', async () => {
    const path = join(root, 'other.db');
    const put = await toolbus(home, ['put', 'prompt/x', '{"template":"Hi"}', '--store', path]);
    assert.equal(put.code, 0, put.stderr);
    assert.equal((await toolbus(home, ['get', 'prompt/x'])).code, 1); // not in the default store
    assert.equal((await toolbus(home, ['get', 'prompt/x', '--store', path])).code, 0);
    const bad = join(root, 'bad.db');
    writeFileSync(bad, 'garbage '.repeat(200));
    const r = await toolbus(home, ['list', '--store', bad]);
    assert.equal(r.code, 1);
    assert.ok(r.stderr.includes(bad), r.stderr);
    assert.match(r.stderr, /not a SQLite database/);
  });

  test('get, list and delete never create a store: a mistyped --store exits 1 naming the path', async () => {
    const typo = join(root, 'no-such-dir', 'confg.db');
    for (const args of [['list'], ['get', 'tool/x'], ['delete', 'tool/x']]) {
      const r = await toolbus(home, [...args, '--store', typo]);
      assert.equal(r.code, 1, `${args[0]}: ${r.stderr}`);
      assert.ok(r.stderr.includes(`no config file at '${typo}'`), r.stderr);
    }
    assert.equal(existsSync(join(root, 'no-such-dir')), false);
    // A fresh home: list says there is nothing yet (exit 0), get says so too (exit 1); no file appears.
    const fresh = join(root, 'fresh-home');
    const list = await toolbus(fresh, ['list']);
    assert.deepEqual([list.code, list.stdout], [0, '']);
    assert.match(list.stderr, /no config items .*toolbus config put/);
    assert.deepEqual(JSON.parse((await toolbus(fresh, ['list', '--json'])).stdout), []);
    const get = await toolbus(fresh, ['get', 'tool/x']);
    assert.equal(get.code, 1);
    assert.match(get.stderr, /no config items yet/);
    assert.equal(existsSync(fresh), false);
  });

  test('--help describes both syntaxes and exits 0', async () => {
    const r = await toolbus(home, ['--help']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /put TYPE\/KEY < item\.json/);
    assert.match(r.stdout, /--type T --key K --stdin/);
    // A newcomer can load both levels from the help alone: its examples are valid items.
    const examples = [...r.stdout.matchAll(/config put (\S+) '([^']+)'/g)]
      .map((m) => [m[1]!, m[2]!] as const)
      .filter(([address]) => address !== 'TYPE/KEY');
    assert.deepEqual(
      examples.map(([address]) => address),
      ['tool-service/joke-service', 'tool/tell-joke', 'resource/readme', 'resource/joke'],
    );
    const h = join(root, 'help-home');
    for (const [address, json] of examples) {
      const put = await toolbus(h, ['put', address, json]);
      assert.deepEqual([put.code, put.stderr], [0, ''], `${address}: ${put.stderr}`);
    }
  });

  test('--nats URL keeps the config in NATS JetStream key-value', async (t) => {
    const nats = await startNatsServer();
    t.after(() => nats.stop());
    const put = await toolbus(
      home,
      ['put', 'tool-service/joke-service', '--nats', nats.url],
      JSON.stringify(jokeService),
    );
    assert.equal(put.code, 0, put.stderr);
    const get = await toolbus(home, ['get', 'tool-service/joke-service', '--nats', nats.url]);
    assert.equal(get.code, 0, get.stderr);
    assert.deepEqual(JSON.parse(get.stdout), jokeService);
  });
});
