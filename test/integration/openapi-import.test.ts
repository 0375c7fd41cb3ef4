/**
 * `toolbus openapi import` on the real Swagger Petstore documents (OpenAPI 3.0 and 3.1, in
 * test/fixtures/openapi/): the CLI writes http tool items into a SQLite store, a registry builds them,
 * and their calls reach a Petstore-like server on 127.0.0.1 with the right path, query, headers (auth
 * from an allowlisted variable) and body. Also the refusals and the failures a user meets: a variable
 * not allowed, a file that is not OpenAPI, a broken $ref, an unknown --include name, a missing file.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { httpToolType } from '../../src/adapters/http/index.js';
import { SqliteConfigStore } from '../../src/config/sqlite/index.js';
import { ToolRegistry } from '../../src/registry/index.js';
import { runMain, type InProcessRun } from '../support/cli-in-process.js';
import { interrupt, runCli, startCli } from '../support/cli.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/openapi/', import.meta.url));
const API_KEY = 'key-123-do-not-print';

interface Seen {
  method: string;
  path: string;
  query: Record<string, string[]>;
  headers: IncomingHttpHeaders;
  body: unknown;
}

/** A Petstore-like server: the four routes the tests call, under /api/v3 and /api/v31. */
async function startPetstore(): Promise<{ origin: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://petstore');
      const path = url.pathname.replace(/^\/api\/v31?/, '');
      const query: Record<string, string[]> = {};
      for (const [k, v] of url.searchParams) (query[k] ??= []).push(v);
      const body = text === '' ? undefined : (JSON.parse(text) as unknown);
      seen.push({ method: req.method ?? '', path, query, headers: req.headers, body });
      const json = (status: number, value: unknown): void => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      const pet = /^\/pet\/(\d+)$/.exec(path);
      if (req.method === 'GET' && path === '/pet/findByStatus') {
        return json(200, [{ id: 1, name: 'Rex', status: query['status']?.[0] ?? 'available' }]);
      }
      if (req.method === 'GET' && pet) {
        if (req.headers['api_key'] !== API_KEY) return json(401, { message: 'missing or wrong api_key' });
        return json(200, { id: Number(pet[1]), name: 'Rex', photoUrls: [], status: 'available' });
      }
      if (req.method === 'POST' && path === '/pet') return json(200, { ...(body as object), id: 10 });
      if (req.method === 'DELETE' && pet) return json(200, { deleted: Number(pet[1]) });
      if (req.method === 'POST' && path === '/tree') return json(200, { ok: true });
      json(404, { message: `no route ${req.method} ${path}` });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

let petstore: Awaited<ReturnType<typeof startPetstore>>;
let root: string;
let homes = 0;

before(async () => {
  petstore = await startPetstore();
  root = await mkdtemp(join(tmpdir(), 'toolbus-openapi-'));
});
after(async () => {
  await new Promise<void>((resolve) => petstore.server.close(() => resolve()));
  await rm(root, { recursive: true, force: true });
});

function freshHome(): string {
  return join(root, `home-${++homes}`);
}

/** No stack trace, no path of this machine the user did not type. */
function assertClean(run: InProcessRun): void {
  const all = run.stdout + run.stderr;
  assert.doesNotMatch(all, /\n\s+at /, all);
  assert.ok(!all.includes(root), `a machine path leaked:\n${all}`);
  assert.ok(!all.includes(API_KEY), `the secret leaked:\n${all}`);
}

/** A registry over the store the import wrote, the variable given and allowed (or not). */
async function openRegistry(home: string, allowed: string[], env: Record<string, string>) {
  const store = new SqliteConfigStore({ path: join(home, 'config.db') });
  const registry = new ToolRegistry({
    store,
    allowlist: { env: allowed },
    toolTypes: { http: httpToolType({ env }) },
  });
  await registry.start();
  return {
    store,
    registry,
    async call(name: string, args: Record<string, unknown>): Promise<{ value: unknown; seen: Seen }> {
      const before = petstore.seen.length;
      const result = await registry.tools.call(name, args);
      assert.equal(result.isError, false, result.content);
      assert.equal(petstore.seen.length, before + 1, 'one request reached the server');
      return { value: JSON.parse(result.content) as unknown, seen: petstore.seen.at(-1)! };
    },
    async close() {
      await registry.close();
      await store.close();
    },
  };
}

for (const version of ['3.0', '3.1'] as const) {
  describe(`the Petstore, OpenAPI ${version}`, () => {
    const fixture = join(FIXTURES, `petstore-${version}.yaml`);
    const base = version === '3.0' ? '/api/v3' : '/api/v31';

    test('imports every callable operation, and the tools call the server as the spec says', async (t) => {
      const home = freshHome();
      const env = { TOOLBUS_HOME: home, TOOLBUS_ALLOW_ENV: 'PETSTORE_API_KEY' };
      const run = await runMain(
        ['openapi', 'import', fixture, '--id', 'petstore', '--server', `${petstore.origin}${base}`],
        { env, cwd: root },
      );
      assert.equal(run.code, 0, run.stderr);
      assertClean(run);
      assert.match(run.stdout, /^tool\/petstore-getPetById {2}<- GET \/pet\/\{petId\} \(getPetById\)$/m);
      assert.match(run.stdout, /They read PETSTORE_API_KEY from the environment when called/);
      // Nothing is dropped silently: oauth2 cannot be sent, the image upload is not JSON.
      assert.match(run.stderr, /warning: security scheme 'petstore_auth' \(oauth2\) is not supported/);
      if (version === '3.0') {
        assert.match(
          run.stderr,
          /warning: operation 'uploadFile' \(POST \/pet\/\{petId\}\/uploadImage\) skipped: its request body is application\/octet-stream/,
        );
        assert.match(run.stdout, /^18 of 18 tools written\.$/m);
      } else {
        assert.match(run.stdout, /^6 of 6 tools written\.$/m);
      }

      const tools = await openRegistry(home, ['PETSTORE_API_KEY'], { PETSTORE_API_KEY: API_KEY });
      t.after(() => tools.close());
      assert.deepEqual(tools.registry.problems(), []);
      const item = (await tools.store.get('tool', 'petstore-getPetById'))?.value as Record<string, unknown>;
      assert.deepEqual(item['tags'], ['openapi:petstore', 'pet']);
      assert.deepEqual(item['headers'], { api_key: { env: 'PETSTORE_API_KEY' } });
      const getPet = tools.registry.tools.get('petstore-getPetById');
      assert.ok(getPet);
      assert.deepEqual(getPet.schema.parameters.required, ['petId']);
      assert.match(
        JSON.stringify(getPet.schema.parameters.properties['petId']),
        /"type":"integer".*"description":"ID of pet/,
      );

      // GET with a path parameter, and the api_key header from the allowlisted variable.
      const got = await tools.call('petstore-getPetById', { petId: 7 });
      assert.deepEqual([got.seen.method, got.seen.path], ['GET', '/pet/7']);
      assert.equal(got.seen.headers['api_key'], API_KEY);
      assert.equal((got.value as { id: number }).id, 7);

      // GET with a query parameter (an enum with a default in the spec).
      const found = await tools.call('petstore-findPetsByStatus', { status: 'sold' });
      assert.deepEqual(
        [found.seen.method, found.seen.path, found.seen.query],
        ['GET', '/pet/findByStatus', { status: ['sold'] }],
      );
      assert.deepEqual(found.value, [{ id: 1, name: 'Rex', status: 'sold' }]);
      assert.equal(found.seen.body, undefined);

      // POST with the JSON body as the argument 'body'.
      const pet = { id: 10, name: 'doggie', photoUrls: ['http://x/1.png'], status: 'available' };
      const added = await tools.call('petstore-addPet', { body: pet });
      assert.deepEqual([added.seen.method, added.seen.path], ['POST', '/pet']);
      assert.equal(added.seen.headers['content-type'], 'application/json');
      assert.deepEqual(added.seen.body, pet);
      assert.deepEqual(Object.keys(added.seen.query), []);

      // DELETE with the api_key header parameter, given by the model.
      const deleted = await tools.call('petstore-deletePet', { petId: 3, api_key: 'from-the-model' });
      assert.deepEqual([deleted.seen.method, deleted.seen.path], ['DELETE', '/pet/3']);
      assert.equal(deleted.seen.headers['api_key'], 'from-the-model');
      assert.deepEqual(deleted.value, { deleted: 3 });

      // A bad argument never reaches the server: the spec's enum is in the schema.
      const count = petstore.seen.length;
      const bad = await tools.registry.tools.call('petstore-findPetsByStatus', { status: 'lost' });
      assert.equal(bad.isError, true);
      assert.equal(bad.error?.code, 'invalid-arguments');
      assert.equal(petstore.seen.length, count);
    });

    test('a variable TOOLBUS_ALLOW_ENV does not list is refused: nothing written, the setting named', async () => {
      const home = freshHome();
      const run = await runMain(
        ['openapi', 'import', fixture, '--id', 'petstore', '--server', `${petstore.origin}${base}`],
        { env: { TOOLBUS_HOME: home, TOOLBUS_ALLOW_ENV: 'WEATHER_*' }, cwd: root },
      );
      assert.equal(run.code, 1, run.stderr);
      assertClean(run);
      assert.match(
        run.stderr,
        /error: the tools would read the environment variable 'PETSTORE_API_KEY' \(tool\/petstore-[^)]*getPetById[^)]*\), which is not allowed/,
      );
      assert.match(
        run.stderr,
        /set TOOLBUS_ALLOW_ENV=WEATHER_\*,PETSTORE_API_KEY in the environment of 'toolbus up'/,
      );
      assert.match(run.stderr, /Nothing was written\.$/m);
      assert.equal(existsSync(join(home, 'config.db')), false);
    });
  });
}

describe('options', () => {
  const fixture = join(FIXTURES, 'petstore-3.0.yaml');

  test('--include, --auth-env for an oauth2 token, --dry-run, and a second import leaves items alone', async (t) => {
    const home = freshHome();
    const server = `${petstore.origin}/api/v3`;
    const common = ['--id', 'petstore', '--server', server, '--include', 'addPet,getPetById'];
    const env = { TOOLBUS_HOME: home, TOOLBUS_ALLOW_ENV: 'PETSTORE_*' };

    const dry = await runMain(
      ['openapi', 'import', fixture, ...common, '--auth-env', 'petstore_auth=PETSTORE_TOKEN', '--dry-run'],
      { env, cwd: root },
    );
    assert.equal(dry.code, 0, dry.stderr);
    const items = JSON.parse(dry.stdout) as { type: string; key: string; value: Record<string, unknown> }[];
    assert.deepEqual(
      items.map((i) => `${i.type}/${i.key}`),
      ['tool/petstore-addPet', 'tool/petstore-getPetById'],
    );
    assert.deepEqual(items[0]!.value['headers'], {
      Authorization: { env: 'PETSTORE_TOKEN', prefix: 'Bearer ' },
    });
    assert.equal(existsSync(join(home, 'config.db')), false, '--dry-run writes nothing');
    // With a token for petstore_auth, no operation is left without auth, so there is no warning.
    assert.doesNotMatch(dry.stderr, /petstore_auth/);

    const run = await runMain(
      ['openapi', 'import', fixture, ...common, '--auth-env', 'petstore_auth=PETSTORE_TOKEN'],
      { env, cwd: root },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^2 of 2 tools written\.$/m);
    const again = await runMain(['openapi', 'import', fixture, ...common], { env, cwd: root });
    assert.equal(again.code, 0, again.stderr);
    assert.match(
      again.stdout,
      /tool\/petstore-addPet {2}<- POST \/pet \(addPet\) \(exists; left alone, use --overwrite\)/,
    );
    assert.match(again.stdout, /^0 of 2 tools written\.$/m);

    const tools = await openRegistry(home, ['PETSTORE_*'], { PETSTORE_TOKEN: 'oauth-token' });
    t.after(() => tools.close());
    const added = await tools.call('petstore-addPet', { body: { name: 'doggie', photoUrls: [] } });
    assert.equal(added.seen.headers['authorization'], 'Bearer oauth-token');
  });

  test('a JSON spec: bearer auth from a bare --auth-env, a recursive schema', async (t) => {
    const home = freshHome();
    const spec = {
      openapi: '3.1.0',
      info: { title: 'Trees', version: '1' },
      servers: [{ url: `${petstore.origin}/api/v3` }],
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } },
        schemas: {
          Node: {
            type: 'object',
            properties: {
              name: { type: 'string' },
              children: { type: 'array', items: { $ref: '#/components/schemas/Node' } },
            },
          },
        },
      },
      security: [{ bearerAuth: [] }],
      paths: {
        '/tree': {
          post: {
            operationId: 'addTree',
            summary: 'Add a tree',
            requestBody: {
              required: true,
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Node' } } },
            },
            responses: { '200': { description: 'ok', content: { 'application/json': {} } } },
          },
        },
      },
    };
    await writeFile(join(root, 'trees.json'), JSON.stringify(spec));
    const run = await runMain(
      ['openapi', 'import', 'trees.json', '--id', 'trees', '--auth-env', 'TREES_TOKEN'],
      {
        env: { TOOLBUS_HOME: home, TOOLBUS_ALLOW_ENV: 'TREES_TOKEN' },
        cwd: root,
      },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stderr, '');
    const tools = await openRegistry(home, ['TREES_TOKEN'], { TREES_TOKEN: 'tree-token' });
    t.after(() => tools.close());
    const tree = { name: 'a', children: [{ name: 'b', children: [] }] };
    const added = await tools.call('trees-addTree', { body: tree });
    assert.equal(added.seen.headers['authorization'], 'Bearer tree-token');
    assert.deepEqual(added.seen.body, tree);
  });

  test('toolbus call runs an imported tool in its own process, and the registry refuses a variable not allowed', async () => {
    const home = freshHome();
    const run = await runMain(
      [
        'openapi',
        'import',
        fixture,
        '--id',
        'petstore',
        '--server',
        `${petstore.origin}/api/v3`,
        '--include',
        'getPetById',
      ],
      { env: { TOOLBUS_HOME: home, TOOLBUS_ALLOW_ENV: 'PETSTORE_API_KEY' }, cwd: root },
    );
    assert.equal(run.code, 0, run.stderr);
    const base: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home };
    const store = ['--store', join(home, 'config.db')];
    const allowed = await runCli(['call', 'petstore-getPetById', 'petId=5', ...store], {
      ...base,
      TOOLBUS_ALLOW_ENV: 'PETSTORE_API_KEY',
      PETSTORE_API_KEY: API_KEY,
    });
    assert.equal(allowed.code, 0, allowed.stderr);
    assert.equal((JSON.parse(allowed.stdout) as { id: number }).id, 5);
    assert.equal(petstore.seen.at(-1)!.headers['api_key'], API_KEY);

    // Written while allowed, read by a process whose operator did not allow it: the tool is not built.
    const refused = await runCli(['call', 'petstore-getPetById', 'petId=5', ...store], {
      ...base,
      PETSTORE_API_KEY: API_KEY,
    });
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr + refused.stdout,
      /reads the environment variable 'PETSTORE_API_KEY', which is not allowed/,
    );
    assert.ok(!(refused.stderr + refused.stdout).includes(API_KEY));
  });
});

describe('through toolbus up', () => {
  const fixture = join(FIXTURES, 'petstore-3.0.yaml');

  test('an import into the store of a running toolbus up: its tools are live at once, searchable by tag, in a tag profile, and callable through the gateway', async (t) => {
    const home = freshHome();
    const token = 'openapi-admin-token-0123456789abc';
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TOOLBUS_HOME: home,
      TOOLBUS_TOKEN: token,
      TOOLBUS_ALLOW_ENV: 'PETSTORE_API_KEY',
      PETSTORE_API_KEY: API_KEY,
    };
    const up = await startCli(['up', '--port', '0', '--no-examples'], env, /Press Ctrl-C to stop\./);
    t.after(() => interrupt(up.child));
    const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())?.[1];
    assert.ok(url, up.output());
    const api = (path: string, init: RequestInit = {}) =>
      fetch(`${url}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, ...init.headers } });

    const run = await runCli(
      ['openapi', 'import', fixture, '--id', 'petstore', '--server', `${petstore.origin}/api/v3`],
      env,
    );
    assert.equal(run.code, 0, run.stderr);
    const put = await runCli(['config', 'put', 'profile/pets', '{"tags": ["openapi:petstore"]}'], env);
    assert.equal(put.code, 0, put.stderr);

    const listed = (await (await api('/api/v1/tools?fresh=1&profile=pets')).json()) as {
      tools: { name: string; tags?: string[] }[];
    };
    assert.ok(listed.tools.length >= 10, listed.tools.map((x) => x.name).join(', '));
    assert.ok(listed.tools.every((x) => x.tags?.includes('openapi:petstore')));
    const found = (await (await api('/api/v1/tools?search=pet+by+id&limit=3')).json()) as {
      tools: { name: string }[];
    };
    assert.equal(found.tools[0]?.name, 'petstore-getPetById');

    const before = petstore.seen.length;
    const invoked = await api('/api/v1/tools/petstore-getPetById/invoke', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"petId": 7}',
    });
    assert.equal(invoked.status, 200);
    const result = (await invoked.json()) as { content: string; isError: boolean };
    assert.equal(result.isError, false, result.content);
    assert.equal((JSON.parse(result.content) as { id: number }).id, 7);
    assert.equal(petstore.seen.length, before + 1);
    assert.equal(petstore.seen.at(-1)!.headers['api_key'], API_KEY);
    assert.ok(!result.content.includes(API_KEY));
  });
});

describe('failures a user meets', () => {
  const fixture = join(FIXTURES, 'petstore-3.0.yaml');
  const env = () => ({ TOOLBUS_HOME: freshHome(), TOOLBUS_ALLOW_ENV: 'PETSTORE_API_KEY' });

  test('a file that is not OpenAPI, a broken $ref, an unresolvable $anchor: exit 1 with the reason', async () => {
    await writeFile(join(root, 'package.json'), JSON.stringify({ name: 'not-a-spec', version: '1.0.0' }));
    const notOpenApi = await runMain(['openapi', 'import', 'package.json', '--id', 'x'], {
      env: env(),
      cwd: root,
    });
    assert.equal(notOpenApi.code, 1);
    assertClean(notOpenApi);
    assert.equal(
      notOpenApi.stderr,
      "toolbus openapi: 'package.json' is not an OpenAPI document: expected a JSON or YAML object with an 'openapi' field of 3.0.x or 3.1.x\n",
    );

    const broken = {
      openapi: '3.0.3',
      info: { title: 'Broken', version: '1' },
      servers: [{ url: 'http://127.0.0.1:1' }],
      paths: {
        '/x': {
          get: {
            operationId: 'getX',
            responses: {
              '200': {
                description: 'ok',
                content: { 'application/json': { schema: { $ref: '#/components/schemas/Nope' } } },
              },
            },
          },
        },
      },
    };
    await writeFile(join(root, 'broken.json'), JSON.stringify(broken));
    const badRef = await runMain(['openapi', 'import', 'broken.json', '--id', 'x'], {
      env: env(),
      cwd: root,
    });
    assert.equal(badRef.code, 1);
    assertClean(badRef);
    assert.match(
      badRef.stderr,
      /^toolbus openapi: the spec 'broken\.json' is not valid OpenAPI: Missing \$ref pointer "#\/components\/schemas\/Nope"/,
    );

    // The v31 Petstore as published: its $id/$anchor reference is reported, not a crash.
    const fixed = await readFile(join(FIXTURES, 'petstore-3.1.yaml'), 'utf8');
    const original = fixed.replace(
      "$ref: '#/components/schemas/PetDetails/properties/id'",
      '$ref: /components/schemas/petdetails#pet_details_id',
    );
    assert.notEqual(original, fixed);
    await writeFile(join(root, 'petstore-3.1-original.yaml'), original);
    const anchor = await runMain(['openapi', 'import', 'petstore-3.1-original.yaml', '--id', 'petstore'], {
      env: env(),
      cwd: root,
    });
    assert.equal(anchor.code, 1);
    assertClean(anchor);
    assert.match(
      anchor.stderr,
      /^toolbus openapi: cannot read the spec 'petstore-3\.1-original\.yaml': .*pet_details_id/,
    );
  });

  test('usage errors exit 2: an unknown --include name, a missing file, no --id, a relative server', async () => {
    const server = ['--server', `${petstore.origin}/api/v3`];
    const include = await runMain(
      ['openapi', 'import', fixture, '--id', 'petstore', ...server, '--include', 'getPetById,getPetByIdd'],
      { env: env(), cwd: root },
    );
    assert.equal(include.code, 2);
    assertClean(include);
    assert.match(
      include.stderr,
      /^toolbus openapi: --include: the spec has no operation 'getPetByIdd' \(did you mean 'getPetById'\?\); its operations: updatePet, addPet, /,
    );
    assert.match(include.stderr, /Run 'toolbus openapi --help' for usage\./);

    const missing = await runMain(['openapi', 'import', 'specs/nope.yaml', '--id', 'x'], {
      env: env(),
      cwd: root,
    });
    assert.equal(missing.code, 2);
    assertClean(missing);
    assert.match(
      missing.stderr,
      /^toolbus openapi: cannot read the spec 'specs\/nope\.yaml': there is no such file$/m,
    );

    const noId = await runMain(['openapi', 'import', fixture], { env: env(), cwd: root });
    assert.equal(noId.code, 2);
    assert.match(noId.stderr, /missing --id NAME/);

    const relative = await runMain(
      ['openapi', 'import', join(FIXTURES, 'petstore-3.1.yaml'), '--id', 'petstore'],
      {
        env: env(),
        cwd: root,
      },
    );
    assert.equal(relative.code, 2);
    assert.match(relative.stderr, /the spec's server URL '\/api\/v31' is not absolute: pass --server/);

    const unknownScheme = await runMain(
      ['openapi', 'import', fixture, '--id', 'petstore', ...server, '--auth-env', 'api_kye=X'],
      { env: env(), cwd: root },
    );
    assert.equal(unknownScheme.code, 2);
    assert.match(
      unknownScheme.stderr,
      /the spec has no security scheme 'api_kye' \(did you mean 'api_key'\?\)/,
    );
  });

  test('--help explains the command with an example', async () => {
    const run = await runMain(['openapi', 'import', '--help']);
    assert.equal(run.code, 0);
    assert.match(run.stdout, /^Usage: toolbus openapi import <spec\.json\|spec\.yaml> --id NAME/);
    assert.match(run.stdout, /toolbus openapi import petstore\.yaml --id petstore --server https:\/\//);
    const main = await runMain(['--help']);
    assert.match(main.stdout, /^ {2}openapi {3}import the operations of an OpenAPI spec as http tools$/m);
  });
});
