/**
 * @module Unit tests of the OpenAPI conversion: names, argument locations, auth, schemas, and what is
 * left out (always with a warning). Documents are written here as the parser hands them over: plain
 * objects with their `$ref`s already replaced (a recursive schema is a cycle of objects).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolbusError } from '../../errors/index.js';
import type { JsonObject } from '../../schema/index.js';
import { httpToolFromConfig } from './http-tool-config.js';
import { openApiEnvName, openApiServerUrl, openApiToolConfigs } from './openapi-tools.js';

const SERVER = 'https://api.example.com/v1';

function spec(paths: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    openapi: '3.0.3',
    info: { title: 'Shop', version: '1' },
    servers: [{ url: SERVER }],
    paths,
    ...extra,
  };
}

const ok = { '200': { description: 'ok', content: { 'application/json': { schema: { type: 'object' } } } } };

function itemOf(result: ReturnType<typeof openApiToolConfigs>, key: string): JsonObject {
  const item = result.items.find((i) => i.key === key);
  assert.ok(item, `no item ${key} among ${result.items.map((i) => i.key).join(', ')}`);
  return item.value;
}

function schemaOf(value: JsonObject): { properties: Record<string, JsonObject>; required?: string[] } {
  return value['json_schema'] as never;
}

function invalid(code: string, fragment: string) {
  return (e: unknown) => e instanceof ToolbusError && e.code === code && e.message.includes(fragment);
}

describe('names', () => {
  test('<id>-<operationId>, method and path without one, collisions numbered, all within 64', () => {
    const long = 'x'.repeat(80);
    const result = openApiToolConfigs(
      spec({
        '/pets/{petId}': {
          get: { operationId: 'getPet', responses: ok },
          delete: { responses: ok },
        },
        '/a': { get: { operationId: 'get.pet', responses: ok } },
        '/b': { get: { operationId: 'get pet', responses: ok } },
        '/c': { get: { operationId: long, responses: ok } },
      }),
      'shop',
    );
    assert.deepEqual(
      result.items.map((i) => i.key),
      ['shop-getPet', 'shop-delete_pets_petId', 'shop-get_pet', 'shop-get_pet_2', result.items[4]!.key],
    );
    const cut = result.items[4]!.key;
    assert.match(cut, /^shop-x+-[0-9a-f]{8}$/);
    assert.equal(cut.length, 64);
    for (const item of result.items) assert.match(item.key, /^[a-zA-Z0-9_-]{1,64}$/);
    assert.deepEqual(result.operations, ['getPet', 'delete_pets_petId', 'get.pet', 'get pet', long]);
  });

  test('--include keeps names stable, takes operationIds or tool names, and reports the unknown', () => {
    const paths = {
      '/a': { get: { operationId: 'get pet', responses: ok } },
      '/b': { get: { operationId: 'get.pet', responses: ok } },
    };
    const result = openApiToolConfigs(spec(paths), 'shop', {
      include: ['get.pet', 'shop-get_pet', 'getPett'],
    });
    assert.deepEqual(
      result.items.map((i) => i.key),
      ['shop-get_pet', 'shop-get_pet_2'],
    );
    assert.deepEqual(result.missing, ['getPett']);
    const bare = openApiToolConfigs(spec(paths), 'shop', { prefix: '', include: ['get.pet'] });
    assert.deepEqual(
      bare.items.map((i) => i.key),
      ['get_pet_2'],
    );
  });

  test('a bad id or prefix is invalid-arguments', () => {
    assert.throws(
      () => openApiToolConfigs(spec({}), 'my shop'),
      invalid('invalid-arguments', "the id 'my shop'"),
    );
    assert.throws(
      () => openApiToolConfigs(spec({}), 'shop', { prefix: 'a.b' }),
      invalid('invalid-arguments', "the prefix 'a.b'"),
    );
  });
});

describe('arguments', () => {
  test('path, query and header parameters with descriptions, required flags, enums and locations', () => {
    const result = openApiToolConfigs(
      spec({
        '/pets/{pet.id}': {
          parameters: [{ name: 'pet.id', in: 'path', required: true, schema: { type: 'integer' } }],
          get: {
            operationId: 'getPet',
            summary: 'Find a pet.',
            description: 'Find a pet by its id.',
            parameters: [
              {
                name: 'status',
                in: 'query',
                description: 'Filter by status',
                required: true,
                schema: { type: 'array', items: { type: 'string', enum: ['available', 'sold'] } },
              },
              {
                name: 'ids',
                in: 'query',
                explode: false,
                schema: { type: 'array', items: { type: 'integer' } },
              },
              { name: 'X-Request-ID', in: 'header', description: 'Trace id', schema: { type: 'string' } },
              { name: 'status', in: 'header', schema: { type: 'string' } },
              { name: 'Accept', in: 'header', schema: { type: 'string' } },
              { name: 'session', in: 'cookie', schema: { type: 'string' } },
            ],
            responses: ok,
          },
        },
      }),
      'shop',
    );
    const value = itemOf(result, 'shop-getPet');
    assert.equal(value['url'], `${SERVER}/pets/{pet_id}`);
    assert.equal(value['method'], 'GET');
    assert.equal(value['description'], 'Find a pet by its id.');
    assert.equal(value['return_type'], 'json');
    const schema = schemaOf(value);
    assert.deepEqual(Object.keys(schema.properties), [
      'pet_id',
      'status',
      'ids',
      'X-Request-ID',
      'status_header',
    ]);
    assert.deepEqual(schema.required, ['pet_id', 'status']);
    assert.deepEqual(schema.properties['status'], {
      type: 'array',
      items: { type: 'string', enum: ['available', 'sold'] },
      description: 'Filter by status',
    });
    assert.equal(schema.properties['X-Request-ID']!['description'], 'Trace id');
    assert.deepEqual(value['query_params'], ['status', { name: 'ids', explode: false }]);
    assert.deepEqual(value['header_params'], ['X-Request-ID', { name: 'status', argument: 'status_header' }]);
    assert.deepEqual(value['tags'], ['openapi:shop']);
    assert.deepEqual(value['allowed_hosts'], ['api.example.com']);
    assert.ok(result.warnings.some((w) => w.includes("cookie parameter 'session' left out")));
    // What the converter writes is what the http tool type builds.
    httpToolFromConfig(value);
  });

  test('a JSON request body is the argument body; other bodies and methods are skipped with a warning', () => {
    const result = openApiToolConfigs(
      spec({
        '/pets': {
          post: {
            operationId: 'addPet',
            tags: ['pet', 'Pet Store'],
            requestBody: {
              description: 'The pet to add',
              required: true,
              content: {
                'application/xml': { schema: { type: 'object' } },
                'application/json': {
                  schema: {
                    type: 'object',
                    required: ['id', 'name'],
                    properties: { id: { type: 'integer', readOnly: true }, name: { type: 'string' } },
                  },
                },
              },
            },
            responses: ok,
          },
          head: { operationId: 'headPets', responses: ok },
          options: { operationId: 'optionsPets', responses: ok },
        },
        '/pets/{id}/photo': {
          put: {
            operationId: 'uploadPhoto',
            parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
            requestBody: { content: { 'image/png': { schema: { type: 'string', format: 'binary' } } } },
            responses: ok,
          },
        },
        '/session': {
          get: {
            operationId: 'getSession',
            parameters: [{ name: 'sid', in: 'cookie', required: true, schema: { type: 'string' } }],
            responses: ok,
          },
        },
      }),
      'shop',
    );
    assert.deepEqual(
      result.items.map((i) => i.key),
      ['shop-addPet'],
    );
    const value = itemOf(result, 'shop-addPet');
    assert.equal(value['body_param'], 'body');
    const schema = schemaOf(value);
    assert.deepEqual(schema.required, ['body']);
    // readOnly properties are the server's to fill in: not sent, not required.
    assert.deepEqual(schema.properties['body'], {
      type: 'object',
      description: 'The pet to add',
      properties: { name: { type: 'string' } },
      required: ['name'],
    });
    assert.deepEqual(value['tags'], ['openapi:shop', 'pet', 'Pet-Store']);
    const warnings = result.warnings.join('\n');
    assert.match(warnings, /operation 'headPets' \(HEAD \/pets\) skipped: the HTTP tool sends GET, POST/);
    assert.match(warnings, /operation 'optionsPets' \(OPTIONS \/pets\) skipped/);
    assert.match(
      warnings,
      /operation 'uploadPhoto' \(PUT \/pets\/\{id\}\/photo\) skipped: its request body is image\/png; the HTTP tool sends application\/json bodies only/,
    );
    assert.match(
      warnings,
      /operation 'getSession' \(GET \/session\) skipped: it needs the cookie parameter 'sid'/,
    );
  });
});

describe('auth', () => {
  const schemes = {
    bearerAuth: { type: 'http', scheme: 'bearer' },
    basic: { type: 'http', scheme: 'basic' },
    api_key: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
    session: { type: 'apiKey', in: 'cookie', name: 'sid' },
    query_key: { type: 'apiKey', in: 'query', name: 'key' },
    oauth: { type: 'oauth2', flows: {} },
  };
  const op = (operationId: string, security?: unknown) => ({
    operationId,
    ...(security === undefined ? {} : { security }),
    responses: ok,
  });
  const doc = spec(
    {
      '/a': { get: op('bearer', [{ bearerAuth: [] }]) },
      '/b': { get: op('basic', [{ basic: [] }]) },
      '/c': { get: op('key', [{ oauth: [] }, { api_key: [] }]) },
      '/d': { get: op('cookie', [{ session: [] }]) },
      '/e': { get: op('both', [{ api_key: [], bearerAuth: [] }]) },
      '/f': { get: op('queryKey', [{ query_key: [] }]) },
      '/g': { get: op('oauthOnly', [{ oauth: [] }]) },
      '/h': { get: op('optional', [{ oauth: [] }, {}]) },
      '/i': { get: op('inherited') },
      '/j': { get: op('none', []) },
    },
    { components: { securitySchemes: schemes }, security: [{ bearerAuth: [] }] },
  );

  test('bearer, basic, apiKey in a header or cookie become headers read from derived variables', () => {
    const result = openApiToolConfigs(doc, 'shop');
    const headers = (key: string) => itemOf(result, key)['headers'];
    assert.deepEqual(headers('shop-bearer'), {
      Authorization: { env: 'SHOP_BEARER_AUTH', prefix: 'Bearer ' },
    });
    assert.deepEqual(headers('shop-basic'), { Authorization: { env: 'SHOP_BASIC', prefix: 'Basic ' } });
    // The first alternative the tool can send wins.
    assert.deepEqual(headers('shop-key'), { 'X-API-Key': { env: 'SHOP_API_KEY' } });
    assert.deepEqual(headers('shop-cookie'), { Cookie: { env: 'SHOP_SESSION', prefix: 'sid=' } });
    assert.deepEqual(headers('shop-both'), {
      'X-API-Key': { env: 'SHOP_API_KEY' },
      Authorization: { env: 'SHOP_BEARER_AUTH', prefix: 'Bearer ' },
    });
    assert.deepEqual(result.items.find((i) => i.key === 'shop-both')!.env, [
      'SHOP_API_KEY',
      'SHOP_BEARER_AUTH',
    ]);
    // The document's security applies to an operation without its own; an empty list means none.
    assert.deepEqual(headers('shop-inherited'), {
      Authorization: { env: 'SHOP_BEARER_AUTH', prefix: 'Bearer ' },
    });
    assert.equal(headers('shop-none'), undefined);
    assert.equal(headers('shop-optional'), undefined);
    // Never a value: only the names of variables.
    assert.doesNotMatch(JSON.stringify(result.items), /secret/i);
  });

  test('what cannot be sent is imported without auth, one warning per scheme saying how to go on', () => {
    const result = openApiToolConfigs(doc, 'shop');
    assert.equal(itemOf(result, 'shop-queryKey')['headers'], undefined);
    assert.equal(itemOf(result, 'shop-oauthOnly')['headers'], undefined);
    const warnings = result.warnings.join('\n');
    assert.match(
      warnings,
      /security scheme 'query_key' \(apiKey in query\) is not supported, so 1 operation is imported without it \(queryKey\): an HTTP tool reads secrets from the environment into headers only/,
    );
    // 'optional' also allows no auth at all, so it is not reported.
    assert.match(
      warnings,
      /security scheme 'oauth' \(oauth2\) is not supported, so 1 operation is imported without it \(oauthOnly\): toolbus runs no OAuth flow; .*--auth-env oauth=VARIABLE/,
    );
  });

  test('authEnv names the variables, and turns an oauth2 scheme into a bearer token', () => {
    const result = openApiToolConfigs(doc, 'shop', {
      authEnv: { oauth: 'SHOP_ACCESS_TOKEN', api_key: 'MY_KEY' },
    });
    assert.deepEqual(itemOf(result, 'shop-oauthOnly')['headers'], {
      Authorization: { env: 'SHOP_ACCESS_TOKEN', prefix: 'Bearer ' },
    });
    // The first alternative is now the oauth2 one.
    assert.deepEqual(itemOf(result, 'shop-key')['headers'], {
      Authorization: { env: 'SHOP_ACCESS_TOKEN', prefix: 'Bearer ' },
    });
    assert.deepEqual(itemOf(result, 'shop-both')['headers'], {
      'X-API-Key': { env: 'MY_KEY' },
      Authorization: { env: 'SHOP_BEARER_AUTH', prefix: 'Bearer ' },
    });
    assert.throws(
      () => openApiToolConfigs(doc, 'shop', { authEnv: { bearer: 'X' } }),
      invalid('invalid-arguments', "the spec has no security scheme 'bearer'"),
    );
    assert.throws(
      () => openApiToolConfigs(doc, 'shop', { authEnv: { api_key: 'not-a-name' } }),
      invalid('invalid-arguments', "the environment variable 'not-a-name'"),
    );
  });

  test('openApiEnvName: <ID>_<SCHEME> in upper snake case, the id not repeated', () => {
    assert.equal(openApiEnvName('petstore', 'api_key'), 'PETSTORE_API_KEY');
    assert.equal(openApiEnvName('petstore', 'petstore_auth'), 'PETSTORE_AUTH');
    assert.equal(openApiEnvName('github', 'bearerAuth'), 'GITHUB_BEARER_AUTH');
    assert.equal(openApiEnvName('my-api', 'api-key'), 'MY_API_API_KEY');
    assert.equal(openApiEnvName('1password', 'token'), '_1PASSWORD_TOKEN');
  });
});

describe('schemas', () => {
  test('OpenAPI 3.0 keywords become JSON Schema 2020-12; extensions and xml are dropped', () => {
    const result = openApiToolConfigs(
      spec({
        '/a': {
          get: {
            operationId: 'a',
            parameters: [
              {
                name: 'n',
                in: 'query',
                schema: {
                  type: 'integer',
                  nullable: true,
                  minimum: 1,
                  exclusiveMinimum: true,
                  example: 5,
                  xml: { name: 'n' },
                  'x-internal': true,
                },
              },
              { name: 'c', in: 'query', schema: { type: 'string', enum: ['a'], nullable: true } },
            ],
            responses: ok,
          },
        },
      }),
      'shop',
    );
    const { properties } = schemaOf(itemOf(result, 'shop-a'));
    assert.deepEqual(properties['n'], { type: ['integer', 'null'], exclusiveMinimum: 1, examples: [5] });
    assert.deepEqual(properties['c'], { type: ['string', 'null'], enum: ['a', null] });
  });

  test('a recursive schema is expanded once along each path, and a deep one is capped with a warning', () => {
    const node: Record<string, unknown> = { type: 'object', properties: { name: { type: 'string' } } };
    (node['properties'] as Record<string, unknown>)['children'] = { type: 'array', items: node };
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 20; i++) deep = { type: 'object', properties: { next: deep } };
    const body = (schema: unknown) => ({ content: { 'application/json': { schema } } });
    const result = openApiToolConfigs(
      spec({
        '/tree': { post: { operationId: 'addTree', requestBody: body(node), responses: ok } },
        '/deep': { post: { operationId: 'addDeep', requestBody: body(deep), responses: ok } },
      }),
      'shop',
      { maxSchemaDepth: 5 },
    );
    assert.deepEqual(schemaOf(itemOf(result, 'shop-addTree')).properties['body'], {
      type: 'object',
      properties: { name: { type: 'string' }, children: { type: 'array', items: { type: 'object' } } },
    });
    let level = schemaOf(itemOf(result, 'shop-addDeep')).properties['body'] as JsonObject;
    let depth = 1;
    while ((level['properties'] as JsonObject | undefined)?.['next'] !== undefined) {
      level = (level['properties'] as JsonObject)['next'] as JsonObject;
      depth++;
    }
    assert.equal(depth, 6);
    assert.ok(
      result.warnings.some((w) => w.includes("operation 'addDeep'") && w.includes('deeper than 5 levels')),
    );
    assert.ok(!result.warnings.some((w) => w.includes("operation 'addTree'")));
  });

  test('descriptions are trimmed and capped; a deprecated operation says so', () => {
    const result = openApiToolConfigs(
      spec({
        '/a': {
          get: {
            operationId: 'a',
            summary: '  Short.  ',
            description: 'y'.repeat(50),
            deprecated: true,
            responses: ok,
          },
        },
        '/b': { delete: { operationId: 'b', responses: { '204': { description: 'gone' } } } },
      }),
      'shop',
      { maxDescriptionLength: 30 },
    );
    const described = itemOf(result, 'shop-a')['description'] as string;
    assert.equal(described.length, 30);
    assert.match(described, /^Deprecated\. Short\.\n\ny+…$/);
    assert.equal(itemOf(result, 'shop-b')['description'], 'DELETE /b');
    assert.equal(itemOf(result, 'shop-b')['return_type'], 'text');
  });
});

describe('documents and servers', () => {
  test('not OpenAPI 3, or Swagger 2.0, is invalid-config', () => {
    assert.throws(
      () => openApiToolConfigs([], 'shop'),
      invalid('invalid-config', 'must be a JSON or YAML object'),
    );
    assert.throws(
      () => openApiToolConfigs({ name: 'pkg' }, 'shop'),
      invalid('invalid-config', "not an OpenAPI 3 document: expected a field 'openapi'"),
    );
    assert.throws(
      () => openApiToolConfigs({ swagger: '2.0', paths: {} }, 'shop'),
      invalid('invalid-config', 'this is a Swagger 2.0 document'),
    );
  });

  test('the server: variables filled in, a relative one needs serverUrl, an operation may have its own', () => {
    const templated = spec(
      {},
      { servers: [{ url: 'https://{region}.example.com/v1', variables: { region: { default: 'eu' } } }] },
    );
    assert.equal(openApiServerUrl(templated), 'https://eu.example.com/v1');
    const relative = spec(
      { '/a': { get: { operationId: 'a', responses: ok } } },
      { servers: [{ url: '/api/v3' }] },
    );
    assert.equal(openApiServerUrl(relative), '/api/v3');
    assert.throws(
      () => openApiToolConfigs(relative, 'shop'),
      invalid('invalid-config', "server URL '/api/v3' is not an absolute"),
    );
    assert.throws(
      () => openApiToolConfigs(relative, 'shop', { serverUrl: 'ftp://x' }),
      invalid('invalid-arguments', "the server URL 'ftp://x' must be an absolute http"),
    );
    const local = openApiToolConfigs(relative, 'shop', { serverUrl: 'http://127.0.0.1:8080/api/v3/' });
    assert.equal(itemOf(local, 'shop-a')['url'], 'http://127.0.0.1:8080/api/v3/a');
    assert.deepEqual(itemOf(local, 'shop-a')['allowed_hosts'], ['127.0.0.1']);
    const own = spec({
      '/a': { get: { operationId: 'a', servers: [{ url: 'https://other.example.com' }], responses: ok } },
    });
    assert.equal(itemOf(openApiToolConfigs(own, 'shop'), 'shop-a')['url'], 'https://other.example.com/a');
    // serverUrl overrides every server.
    assert.equal(
      itemOf(openApiToolConfigs(own, 'shop', { serverUrl: 'http://127.0.0.1:1' }), 'shop-a')['url'],
      'http://127.0.0.1:1/a',
    );
  });
});
