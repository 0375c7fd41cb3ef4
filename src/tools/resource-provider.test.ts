import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isToolbusError } from '../errors/index.js';
import { parseUriTemplate } from './uri-template.js';
import { ResourceSet, toResourceContents, type ResourceChange } from './resource-provider.js';
import { PromptSet, toPromptResult } from './prompt-provider.js';
import { completeFrom } from './completion.js';

const usage = (pattern: RegExp) => (error: unknown) =>
  isToolbusError(error) && error.code === 'usage' && pattern.test(error.message);

const READ = { signal: new AbortController().signal };

describe('parseUriTemplate (RFC 6570 level 1)', () => {
  test('matches, decodes and expands', () => {
    const template = parseUriTemplate('test://template/{id}/data');
    assert.deepEqual(template.variables, ['id']);
    assert.deepEqual(template.match('test://template/123/data'), { id: '123' });
    assert.deepEqual(template.match('test://template/a%20b/data'), { id: 'a b' });
    assert.equal(template.match('test://template/1/2/data'), undefined, 'a variable takes no /');
    assert.equal(template.match('test://template//data'), undefined, 'nor nothing');
    assert.equal(template.match('test://template/1/data?x'), undefined);
    assert.equal(template.expand({ id: 'a b/c' }), 'test://template/a%20b%2Fc/data');
    assert.deepEqual(parseUriTemplate('x://{a}-{b}').match('x://1-2'), { a: '1', b: '2' });
    assert.equal(parseUriTemplate('x://{a}.{b}').match('x://1x2'), undefined, 'literals are literal');
    assert.deepEqual(Object.keys(parseUriTemplate('x://{__proto__}').match('x://p')!), ['__proto__']);
  });

  test('refuses what level 1 cannot say, naming it', () => {
    assert.throws(() => parseUriTemplate('x://{+path}'), usage(/'\{\+path\}' is not a level-1 expression/));
    assert.throws(() => parseUriTemplate('x://{a,b}'), usage(/not a level-1 expression/));
    assert.throws(() => parseUriTemplate('x://{id*}'), usage(/not a level-1 expression/));
    assert.throws(() => parseUriTemplate('x://{id'), usage(/a '\{' without its '\}'/));
    assert.throws(() => parseUriTemplate('x://id}'), usage(/a '\}' without its '\{'/));
    assert.throws(() => parseUriTemplate('x://{a}/{a}'), usage(/variable 'a' appears twice/));
    assert.throws(() => parseUriTemplate(''), usage(/non-empty string/));
  });
});

describe('ResourceSet', () => {
  test('refuses malformed entries with what is wrong', () => {
    assert.throws(() => new ResourceSet({ resources: [{ uri: '', name: 'x', text: '' }] }), usage(/'uri'/));
    assert.throws(
      () => new ResourceSet({ resources: [{ uri: 'a://b', name: '', text: '' }] }),
      usage(/resource 'a:\/\/b': 'name' must be a non-empty string/),
    );
    assert.throws(
      () => new ResourceSet({ resources: [{ uri: 'a://b', name: 'b' }] }),
      usage(/exactly one of 'text', 'blob' \(base64\) or 'read'/),
    );
    assert.throws(
      () => new ResourceSet({ resources: [{ uri: 'a://b', name: 'b', text: 'x', blob: 'AAAA' }] }),
      usage(/exactly one of/),
    );
    assert.throws(
      () => new ResourceSet({ resources: [{ uri: 'a://b', name: 'b', blob: 'not base64!' }] }),
      usage(/'blob' must be base64/),
    );
    assert.throws(
      () =>
        new ResourceSet({
          templates: [{ uriTemplate: 'a://{x}', name: 't', read: () => 'x', complete: { y: [] } }],
        }),
      usage(/'complete' names 'y', which is not one of its variables \(x\)/),
    );
  });

  test('reads text, blobs, functions and templates; undefined for an unknown URI', async () => {
    const set = new ResourceSet({
      resources: [
        { uri: 'a://text', name: 'text', mimeType: 'text/plain', text: 'hi' },
        { uri: 'a://blob', name: 'blob', blob: 'AAAA' },
        { uri: 'a://fn', name: 'fn', read: () => [{ uri: 'a://fn', blob: 'AAAA', mimeType: 'x/y' }] },
      ],
      templates: [
        { uriTemplate: 'a://t/{n}', name: 't', read: (_uri, { n }) => (n === '0' ? undefined : `n=${n}`) },
      ],
    });
    assert.deepEqual(await set.read('a://text', READ), [
      { uri: 'a://text', mimeType: 'text/plain', text: 'hi' },
    ]);
    assert.deepEqual(await set.read('a://blob', READ), [{ uri: 'a://blob', blob: 'AAAA' }]);
    assert.deepEqual(await set.read('a://fn', READ), [{ uri: 'a://fn', mimeType: 'x/y', blob: 'AAAA' }]);
    assert.deepEqual(await set.read('a://t/5', READ), [{ uri: 'a://t/5', text: 'n=5' }]);
    assert.equal(await set.read('a://t/0', READ), undefined);
    assert.equal(await set.read('a://none', READ), undefined);
    assert.equal(set.list().find((r) => r.uri === 'a://blob')?.size, 3);
  });

  test('a read that returns something else is a tool-error', async () => {
    const set = new ResourceSet({ resources: [{ uri: 'a://x', name: 'x', read: () => ({ uri: 'a://x' }) }] });
    await assert.rejects(
      set.read('a://x', READ),
      (e: unknown) => isToolbusError(e) && e.code === 'tool-error',
    );
    assert.throws(() => toResourceContents('a://x', undefined, [{ uri: 'a://x', text: 'a', blob: 'AAAA' }]));
  });

  test('set, delete and updated tell the listeners what changed', () => {
    const set = new ResourceSet({ resources: [{ uri: 'a://x', name: 'x', text: '1' }] });
    const changes: ResourceChange[] = [];
    const off = set.onChange((change) => void changes.push(change));
    set.set({ uri: 'a://x', name: 'x', text: '2' });
    set.set({ uri: 'a://x', name: 'renamed', text: '2' });
    set.set({ uri: 'a://y', name: 'y', text: 'new' });
    set.updated('a://y');
    assert.equal(set.delete('a://y'), true);
    assert.equal(set.delete('a://y'), false);
    off();
    set.updated('a://x');
    assert.deepEqual(changes, [
      { listChanged: false, updated: ['a://x'] },
      { listChanged: true, updated: ['a://x'] },
      { listChanged: true, updated: [] },
      { listChanged: false, updated: ['a://y'] },
      { listChanged: true, updated: ['a://y'] },
    ]);
  });

  test('completion filters a variable’s values by prefix, ignoring case', async () => {
    const set = new ResourceSet({
      templates: [
        { uriTemplate: 'a://{c}', name: 'c', read: () => 'x', complete: { c: ['Paris', 'park', 'Rome'] } },
      ],
    });
    assert.deepEqual(await set.complete('a://{c}', 'c', 'PA', {}), ['Paris', 'park']);
    assert.deepEqual(await set.complete('a://{c}', 'other', '', {}), []);
    assert.deepEqual(await set.complete('a://{none}', 'c', '', {}), []);
    assert.deepEqual(completeFrom(['a', 'a', 'b'], ''), ['a', 'b']);
  });
});

describe('PromptSet', () => {
  test('gets text and results; a missing required argument is invalid-arguments', async () => {
    const prompts = new PromptSet([
      { name: 'p', arguments: [{ name: 'a', required: true }], get: ({ a }) => `a=${a}` },
    ]);
    assert.deepEqual(await prompts.get('p', { a: '1' }, READ), {
      messages: [{ role: 'user', content: { type: 'text', text: 'a=1' } }],
    });
    await assert.rejects(
      prompts.get('p', {}, READ),
      (e: unknown) =>
        isToolbusError(e) && e.code === 'invalid-arguments' && /argument 'a' is required/.test(e.message),
    );
    assert.equal(await prompts.get('nope', {}, READ), undefined);
  });

  test('refuses malformed entries and results', () => {
    assert.throws(() => new PromptSet([{ name: '', get: () => '' }]), usage(/'name'/));
    assert.throws(
      () => new PromptSet([{ name: 'p', get: () => '', complete: { x: [] } }]),
      usage(/'complete' names 'x', which is not one of its arguments/),
    );
    assert.throws(
      () =>
        toPromptResult('p', { messages: [{ role: 'system', content: { type: 'text', text: '' } }] } as never),
      (e: unknown) => isToolbusError(e) && e.code === 'tool-error' && /message 0 must be/.test(e.message),
    );
    assert.throws(() => toPromptResult('p', 42 as never), /get must return text or \{ messages/);
  });
});
