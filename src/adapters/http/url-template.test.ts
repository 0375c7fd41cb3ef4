/**
 * @module Unit tests of url-template.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { expandUrlTemplate, parseUrlTemplate, urlTemplateFromParts } from './url-template.js';
import { ToolError } from '../../tools/index.js';
import { ToolbusError } from '../../errors/index.js';

describe('URL templates', () => {
  test('lists each placeholder once, in order', () => {
    const t = parseUrlTemplate('https://api.example.com/{org}/repos/{repo}/{org}?x={q}', 'tool');
    assert.deepEqual(t.params, ['org', 'repo', 'q']);
  });

  test('encodes spaces, non-ASCII, "/", "?", "#" and "%" inside one segment', () => {
    const t = parseUrlTemplate('http://h/users/{id}/x', 'tool');
    assert.equal(
      expandUrlTemplate(t, { id: 'a b/c?d#e%f' }, 'tool').href,
      'http://h/users/a%20b%2Fc%3Fd%23e%25f/x',
    );
    assert.equal(expandUrlTemplate(t, { id: 'Zürich' }, 'tool').pathname, '/users/Z%C3%BCrich/x');
    assert.equal(expandUrlTemplate(t, { id: 12 }, 'tool').pathname, '/users/12/x');
  });

  test('refuses values that are missing, structured, or dot segments', () => {
    const t = parseUrlTemplate('http://h/u/{id}', 'tool');
    for (const [args, fragment] of [
      [{}, "argument 'id' is required"],
      [{ id: null }, "argument 'id' is required"],
      [{ id: { a: 1 } }, 'must be a string, number or boolean'],
      [{ id: ['a'] }, 'got array'],
      [{ id: '..' }, "must not be '..'"],
      [{ id: '.' }, "must not be '.'"],
      // '/u/' is another resource (often the collection: think DELETE).
      [{ id: '' }, 'must not be empty'],
    ] as const) {
      assert.throws(
        () => expandUrlTemplate(t, args, 'probe'),
        (e: unknown) =>
          e instanceof ToolError && e.code === 'invalid-arguments' && e.message.includes(fragment),
      );
    }
  });

  test('an empty value is fine in the query part of a template', () => {
    const t = parseUrlTemplate('http://h/search?q={q}', 'tool');
    assert.equal(expandUrlTemplate(t, { q: '' }, 'tool').href, 'http://h/search?q=');
  });

  test('rejects templates a model could steer to another host, and malformed ones', () => {
    for (const [source, fragment] of [
      ['http://{host}/x', 'placeholder in its host'],
      ['ftp://h/x', 'absolute http:// or https:// URL'],
      ['/relative/{x}', 'absolute'],
      ['http://h/{not valid}', "placeholder '{not valid}'"],
    ] as const) {
      assert.throws(
        () => parseUrlTemplate(source, "tool 't'"),
        (e: unknown) =>
          e instanceof ToolbusError && e.code === 'invalid-config' && e.message.includes(fragment),
      );
    }
  });

  test('builds from AutoGen parts, brackets IPv6 and checks each part', () => {
    assert.equal(
      urlTemplateFromParts({ scheme: 'https', host: 'api.x', port: 8443, path: 'v1/{id}' }, 't').source,
      'https://api.x:8443/v1/{id}',
    );
    assert.equal(
      urlTemplateFromParts({ scheme: 'http', host: '::1', port: 80, path: '/' }, 't').source,
      'http://[::1]:80/',
    );
    assert.throws(
      () => urlTemplateFromParts({ scheme: 'http', host: 'a/b', port: 1, path: '/' }, 't'),
      /bare host name/,
    );
    assert.throws(
      () => urlTemplateFromParts({ scheme: 'http', host: 'a', port: 0, path: '/' }, 't'),
      /port must be an integer/,
    );
    assert.throws(
      () => urlTemplateFromParts({ scheme: 'file', host: 'a', port: 1, path: '/' }, 't'),
      /scheme must be/,
    );
  });
});
