import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolbusError } from '../errors/index.js';
import { importLeaf } from './import-leaf.js';

test('a missing optional peer fails with the npm install command', async () => {
  const missing = Object.assign(
    new Error("Cannot find package 'openai' imported from /x/dist/models/openai/x.js"),
    {
      code: 'ERR_MODULE_NOT_FOUND',
    },
  );
  await assert.rejects(
    importLeaf('openai', () => Promise.reject(missing)),
    (error: unknown) =>
      error instanceof ToolbusError &&
      error.code === 'unsupported' &&
      error.message.includes('npm install openai') &&
      error.cause === missing,
  );
  const natsMissing = Object.assign(new Error("Cannot find package '@nats-io/kv' imported from /x"), {
    code: 'ERR_MODULE_NOT_FOUND',
  });
  await assert.rejects(
    importLeaf('nats', () => Promise.reject(natsMissing)),
    /npm install @nats-io\/transport-node @nats-io\/jetstream @nats-io\/kv/,
  );
});

test('other failures, and a missing module that is not the peer, pass through unchanged', async () => {
  const other = Object.assign(new Error("Cannot find module '/x/y.js'"), { code: 'ERR_MODULE_NOT_FOUND' });
  await assert.rejects(
    importLeaf('openai', () => Promise.reject(other)),
    (e: unknown) => e === other,
  );
  const boom = new Error('boom');
  await assert.rejects(
    importLeaf('mcp', () => Promise.reject(boom)),
    (e: unknown) => e === boom,
  );
  assert.equal(await importLeaf('mcp', async () => 42), 42);
});
