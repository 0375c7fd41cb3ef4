import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ToolClientFeatures } from '../../tools/index.js';
import { ServerRequestRouter } from './mcp-server-requests.js';

const alice: ToolClientFeatures = { elicit: async () => ({ action: 'decline' }) };
const bob: ToolClientFeatures = { elicit: async () => ({ action: 'cancel' }) };

test('within a call, a server request belongs to that call, whatever else is in flight', async () => {
  const router = new ServerRequestRouter();
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const other = router.run(bob, () => held);
  const seen = await router.run(alice, async () => {
    await Promise.resolve();
    return router.current();
  });
  assert.equal(seen, alice);
  release();
  await other;
});

test('outside any call: the only call in flight, nobody when there are several or none', async () => {
  const router = new ServerRequestRouter();
  assert.equal(router.current(), undefined);
  let releaseAlice!: () => void;
  const aliceCall = router.run(alice, () => new Promise<void>((resolve) => (releaseAlice = resolve)));
  assert.equal(router.current(), alice);
  let releaseAnon!: () => void;
  // A call whose caller offers nothing still counts: its question must not go to alice.
  const anonCall = router.run(undefined, () => new Promise<void>((resolve) => (releaseAnon = resolve)));
  assert.equal(router.current(), undefined);
  releaseAnon();
  await anonCall;
  assert.equal(router.current(), alice);
  releaseAlice();
  await aliceCall;
  assert.equal(router.current(), undefined);
});

test('a call that fails leaves the flight', async () => {
  const router = new ServerRequestRouter();
  await assert.rejects(
    router.run(alice, async () => Promise.reject(new Error('boom'))),
    /boom/,
  );
  assert.equal(router.current(), undefined);
});
