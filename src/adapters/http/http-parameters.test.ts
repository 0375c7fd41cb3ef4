/**
 * @module Unit tests of the HTTP tool's explicit parameter locations: the styles, the config checks, and
 * what a real local server receives.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { ToolError } from '../../tools/index.js';
import { ToolbusError } from '../../errors/index.js';
import { appendQueryParameter, headerParameterValue, resolveHttpParameters } from './http-parameters.js';
import { HttpTool } from './http-tool.js';
import { httpToolFromConfig } from './http-tool-config.js';

function query(entry: unknown, value: unknown): string {
  const [parameter] = resolveHttpParameters([entry], 'query', 'queryParams', "tool 't'");
  const params = new URLSearchParams();
  appendQueryParameter(params, parameter!, value);
  return decodeURIComponent(params.toString());
}

test('query styles follow OpenAPI: form explodes by default, the others join, deepObject nests', () => {
  assert.equal(query('status', ['available', 'sold']), 'status=available&status=sold');
  assert.equal(query({ name: 'status', explode: false }, ['a', 'b']), 'status=a,b');
  assert.equal(query({ name: 'ids', style: 'pipeDelimited' }, [1, 2, 3]), 'ids=1|2|3');
  assert.equal(query({ name: 'ids', style: 'spaceDelimited' }, [1, 2]), 'ids=1+2');
  assert.equal(
    query({ name: 'color', style: 'deepObject' }, { R: 100, G: 200 }),
    'color[R]=100&color[G]=200',
  );
  assert.equal(query('color', { R: 100, G: 200 }), 'R=100&G=200');
  assert.equal(query({ name: 'color', explode: false }, { R: 100, G: 200 }), 'color=R,100,G,200');
  assert.equal(query({ name: 'filter', style: 'json' }, { a: [1] }), 'filter={"a":[1]}');
  assert.equal(query({ name: 'q', argument: 'search' }, 'cats'), 'q=cats');
  // Left out like an argument the model did not send.
  assert.equal(query('status', undefined), '');
  assert.equal(query('status', null), '');
});

test('header values: simple style joins arrays and objects; a line break is invalid-arguments', () => {
  const [simple, exploded, json] = resolveHttpParameters(
    ['X-Ids', { name: 'X-Map', explode: true }, { name: 'X-Json', style: 'json' }],
    'header',
    'headerParams',
    "tool 't'",
  );
  assert.equal(headerParameterValue(simple!, [1, 2], 't'), '1,2');
  assert.equal(headerParameterValue(simple!, { a: 1, b: 2 }, 't'), 'a,1,b,2');
  assert.equal(headerParameterValue(exploded!, { a: 1, b: 2 }, 't'), 'a=1,b=2');
  assert.equal(headerParameterValue(json!, ['x'], 't'), '["x"]');
  assert.equal(headerParameterValue(simple!, undefined, 't'), undefined);
  assert.throws(
    () => headerParameterValue(simple!, 'a\r\nInjected: 1', 'probe'),
    (e: unknown) =>
      e instanceof ToolError &&
      e.code === 'invalid-arguments' &&
      e.message.includes("argument 'X-Ids' (header 'X-Ids') must not contain line breaks"),
  );
});

test('bad parameter lists are invalid-config naming the entry and what was expected', () => {
  const cases: [unknown, 'query' | 'header', string][] = [
    ['status', 'query', 'must be an array'],
    [[3], 'query', '[0] must be an argument name or'],
    [[{ name: 'a', where: 'x' }], 'query', "[0]: unknown field 'where'"],
    [[{ name: '' }], 'query', "[0]: 'name' must be a non-empty string"],
    [[{ name: 'a', style: 'simple' }], 'query', "'style' must be one of 'form', 'spaceDelimited'"],
    [[{ name: 'a', explode: 'yes' }], 'query', "'explode' must be true or false"],
    [['a', 'a'], 'query', "[1]: 'a' is listed twice"],
    [['bad header'], 'header', "'bad header' is not a valid HTTP header name"],
    [['Content-Type'], 'header', 'is set by the tool itself'],
    [['X-A', 'x-a'], 'header', 'is listed twice'],
  ];
  for (const [list, location, fragment] of cases) {
    assert.throws(
      () => resolveHttpParameters(list, location, 'query_params', "config 'tool/t'"),
      (e: unknown) =>
        e instanceof ToolbusError &&
        e.code === 'invalid-config' &&
        e.message.startsWith("config 'tool/t': query_params") &&
        e.message.includes(fragment),
      `${JSON.stringify(list)} should fail with ${fragment}`,
    );
  }
});

test('HttpTool checks where the locations point: schema properties, no argument twice, no GET body', () => {
  const schema = {
    type: 'object',
    properties: { id: { type: 'string' }, q: { type: 'string' }, body: { type: 'object' } },
  };
  const base = { name: 't', url: 'http://127.0.0.1:1/items/{id}', jsonSchema: schema };
  const cases: [Record<string, unknown>, string][] = [
    [{ queryParams: ['nope'] }, "argument 'nope' of queryParams is not a property of jsonSchema"],
    [{ queryParams: ['id'] }, "argument 'id' is placed twice, in the path and in queryParams"],
    [{ queryParams: ['q'], headerParams: [{ name: 'X-Q', argument: 'q' }] }, "argument 'q' is placed twice"],
    [{ method: 'GET', bodyParam: 'body' }, 'bodyParam is not allowed with GET'],
    [
      { headerParams: [{ name: 'authorization', argument: 'q' }], headers: { Authorization: 'x' } },
      "header 'authorization' is set by headers",
    ],
  ];
  for (const [extra, fragment] of cases) {
    assert.throws(
      () => new HttpTool({ ...base, ...extra }),
      (e: unknown) =>
        e instanceof ToolbusError && e.code === 'invalid-config' && e.message.includes(fragment),
      fragment,
    );
  }
  // The config form takes the snake_case fields, and tags as metadata the call ignores.
  const tool = httpToolFromConfig({
    name: 't',
    url: 'http://127.0.0.1:1/items/{id}',
    method: 'POST',
    json_schema: schema,
    query_params: ['q'],
    body_param: 'body',
    tags: ['openapi:shop', 'items'],
  });
  assert.equal(tool.name, 't');
  assert.throws(
    () => httpToolFromConfig({ name: 't', url: 'http://127.0.0.1:1/', tags: 'items' }),
    (e: unknown) =>
      e instanceof ToolbusError && e.code === 'invalid-config' && e.message.includes("field 'tags'"),
  );
  assert.throws(
    () => httpToolFromConfig({ name: 't', url: 'http://127.0.0.1:1/', body_param: 3 }),
    /field 'body_param' must be a string/,
  );
});

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

test('a real server sees each argument where the locations say; without them nothing changes', async (t) => {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const schema = {
    type: 'object',
    properties: {
      id: { type: 'integer' },
      status: { type: 'array', items: { type: 'string' } },
      trace: { type: 'string' },
      body: { type: 'object' },
      extra: { type: 'string' },
    },
  };

  // POST with query and header arguments and no body argument: no body is sent.
  const form = new HttpTool({
    name: 'form',
    url: `${origin}/pet/{id}`,
    method: 'POST',
    jsonSchema: schema,
    queryParams: ['status'],
    headerParams: [{ name: 'X-Trace', argument: 'trace' }],
  });
  await form.runJson({ id: 7, status: ['a', 'b'], trace: 't-1' });
  assert.equal(seen[0]!.url, '/pet/7?status=a&status=b');
  assert.equal(seen[0]!.headers['x-trace'], 't-1');
  assert.equal(seen[0]!.body, '');
  assert.equal(seen[0]!.headers['content-type'], undefined);

  // bodyParam: the body is that argument alone; the rest goes into the query.
  const put = new HttpTool({
    name: 'put',
    url: `${origin}/pet/{id}`,
    method: 'PUT',
    jsonSchema: schema,
    bodyParam: 'body',
  });
  await put.runJson({ id: 7, body: { name: 'Rex', tags: ['a'] }, extra: 'x' });
  assert.equal(seen[1]!.url, '/pet/7?extra=x');
  assert.deepEqual(JSON.parse(seen[1]!.body), { name: 'Rex', tags: ['a'] });
  assert.equal(seen[1]!.headers['content-type'], 'application/json');
  await put.runJson({ id: 8 });
  assert.equal(seen[2]!.body, '');

  // No location fields: as before, the other arguments are the JSON body (an empty one included).
  const plain = new HttpTool({
    name: 'plain',
    url: `${origin}/pet/{id}`,
    method: 'POST',
    jsonSchema: schema,
  });
  await plain.runJson({ id: 7, extra: 'x' });
  await plain.runJson({ id: 7 });
  assert.deepEqual(JSON.parse(seen[3]!.body), { extra: 'x' });
  assert.equal(seen[4]!.body, '{}');
});
