import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryConfigStore } from '../config/index.js';
import type { ConfigChange, ConfigItem, ConfigStore } from '../config/index.js';
import { ToolbusError } from '../errors/index.js';
import { ConfigMirror } from './config-mirror.js';

/** Lets watched changes (microtasks and their follow-ups) arrive. */
const flush = async () => {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

/**
 * A memory store whose watch can be held back (as a NATS watcher or another process's SQLite write
 * may deliver late), and whose list can be made to answer from an older read.
 */
function controllableStore() {
  const inner = new MemoryConfigStore();
  let gate: Promise<void> = Promise.resolve();
  let open = (): void => undefined;
  let list: (() => Promise<ConfigItem[]>) | undefined;
  const store: ConfigStore = {
    put: (type, key, value, options) => inner.put(type, key, value, options),
    get: (type, key) => inner.get(type, key),
    list: (type) => (list ? list() : inner.list(type)),
    delete: (type, key, options) => inner.delete(type, key, options),
    revision: () => inner.revision(),
    close: () => inner.close(),
    watch(options) {
      const changes = inner.watch(options)[Symbol.asyncIterator]();
      return {
        [Symbol.asyncIterator]: (): AsyncIterator<ConfigChange> => ({
          next: async () => {
            const next = await changes.next();
            await gate;
            return next;
          },
          return: () => changes.return!(),
        }),
      };
    },
  };
  return {
    inner,
    store,
    holdWatch: () => void (gate = new Promise<void>((resolve) => (open = resolve))),
    releaseWatch: () => open(),
    setList: (fn: (() => Promise<ConfigItem[]>) | undefined) => void (list = fn),
  };
}

async function setup(
  t: { after: (fn: () => unknown) => void },
  store?: ReturnType<typeof controllableStore>,
) {
  const s = store ?? controllableStore();
  const controller = new AbortController();
  let changes = 0;
  const mirror = new ConfigMirror(s.store, {
    retryMs: 5,
    signal: controller.signal,
    onChange: () => void changes++,
  });
  t.after(async () => {
    controller.abort();
    s.releaseWatch();
    await s.inner.close();
  });
  return { ...s, mirror, controller, changes: () => changes };
}

describe('ConfigMirror', () => {
  test('follow loads every item by type and key, then applies watched changes', async (t) => {
    const f = await setup(t);
    await f.inner.put('tool', 'a', { n: 1 });
    await f.mirror.follow();
    assert.deepEqual(f.mirror.get('tool', 'a'), { n: 1 });
    assert.equal(f.changes(), 0, 'the first load is not a change');
    await f.inner.put('tool', 'b', { n: 2 });
    await f.inner.delete('tool', 'a');
    await flush();
    assert.deepEqual([...f.mirror.entries('tool')], [['b', { n: 2 }]]);
    assert.equal(f.changes(), 2);
  });

  test('a write that refresh already read is not applied again when the watch delivers it late', async (t) => {
    const f = await setup(t);
    await f.mirror.follow();
    f.holdWatch();
    await f.inner.put('tool', 'a', { n: 1 });
    await f.mirror.refresh();
    assert.deepEqual(f.mirror.get('tool', 'a'), { n: 1 });
    f.releaseWatch();
    await flush();
    assert.equal(f.changes(), 0, 'the late delivery is already known');
    await f.inner.put('tool', 'a', { n: 2 });
    await flush();
    assert.deepEqual(f.mirror.get('tool', 'a'), { n: 2 });
    assert.equal(f.changes(), 1);
  });

  test('a put and its delete that refresh already read do not bring the item back when delivered late', async (t) => {
    const f = await setup(t);
    await f.mirror.follow();
    f.holdWatch();
    await f.inner.put('tool', 'a', { n: 1 });
    await f.inner.delete('tool', 'a');
    await f.mirror.refresh();
    f.releaseWatch();
    await flush();
    assert.equal(f.mirror.get('tool', 'a'), undefined);
    assert.equal(f.changes(), 0);
  });

  test('a change watched while refresh reads an older list is kept', async (t) => {
    const f = await setup(t);
    await f.inner.put('tool', 'a', { n: 1 });
    await f.mirror.follow();
    // The list answers from before the next write; the watch meanwhile delivers that write.
    const older = await f.inner.list();
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    f.setList(async () => (await answered, older));
    const refreshed = f.mirror.refresh();
    await flush();
    await f.inner.put('tool', 'b', { n: 2 });
    await flush();
    answer();
    await refreshed;
    assert.deepEqual([...f.mirror.entries('tool')].sort(), [
      ['a', { n: 1 }],
      ['b', { n: 2 }],
    ]);
  });

  test('refresh before the first load, or after the signal aborted, does nothing', async (t) => {
    const f = await setup(t);
    await f.inner.put('tool', 'a', {});
    await f.mirror.refresh();
    assert.equal(f.mirror.get('tool', 'a'), undefined);

    await f.mirror.follow();
    f.controller.abort();
    await f.inner.put('tool', 'b', {});
    await f.mirror.refresh();
    assert.equal(f.mirror.get('tool', 'b'), undefined);
  });

  test('a failing first load rejects with the store error; following after the signal aborted rejects with closed', async (t) => {
    const f = await setup(t);
    f.setList(() => Promise.reject(new ToolbusError('store-error', 'no disk')));
    await assert.rejects(f.mirror.follow(), { code: 'store-error', message: 'no disk' });

    const g = await setup(t);
    g.controller.abort(); // e.g. the registry closed while it subscribed to the bus
    const following = g.mirror.follow();
    await assert.rejects(following, { code: 'closed' });
  });
});

test('run state (run/*, approval/*) is not mirrored: saving a run step changes nothing the registry sees', async () => {
  const store = new MemoryConfigStore();
  await store.put('run', 'run-1', { id: 'run-1' });
  await store.put('tool', 'a', { type: 'x' });
  const controller = new AbortController();
  let changes = 0;
  const mirror = new ConfigMirror(store, {
    retryMs: 10,
    signal: controller.signal,
    onChange: () => changes++,
  });
  await mirror.follow();
  assert.equal(mirror.get('run', 'run-1'), undefined);
  assert.deepEqual(mirror.get('tool', 'a'), { type: 'x' });
  const before = changes;
  await store.put('approval', 'apr-1', { id: 'apr-1' });
  await store.put('run', 'run-1', { id: 'run-1', step: 2 });
  await store.put('tool', 'b', { type: 'y' });
  for (let i = 0; i < 50 && mirror.get('tool', 'b') === undefined; i++)
    await new Promise((r) => setTimeout(r, 5));
  assert.deepEqual(mirror.get('tool', 'b'), { type: 'y' });
  assert.equal(changes, before + 1, 'only the tool item was a change');
  assert.equal(mirror.get('approval', 'apr-1'), undefined);
  controller.abort();
  store.close();
});

test('an mcp-oauth item is mirrored as whether it holds tokens: a login and a logout are changes, a refresh is not', async () => {
  const store = new MemoryConfigStore();
  const controller = new AbortController();
  let changes = 0;
  const mirror = new ConfigMirror(store, {
    retryMs: 10,
    signal: controller.signal,
    onChange: () => changes++,
  });
  await store.put('mcp-oauth', 'files', { server: 'https://mcp.example.com/mcp', discovery: {} });
  await mirror.follow();
  assert.equal(mirror.get('mcp-oauth', 'files'), undefined, 'no tokens: no login');
  const waitFor = async (expected: boolean | undefined): Promise<void> => {
    for (let i = 0; i < 100 && mirror.get('mcp-oauth', 'files') !== expected; i++) await flush();
    assert.equal(mirror.get('mcp-oauth', 'files'), expected);
  };
  const login = { server: 'https://mcp.example.com/mcp', tokens: { access_token: 'AT-1' } };
  await store.put('mcp-oauth', 'files', login);
  await waitFor(true);
  assert.equal(changes, 1, 'the login');
  await store.put('mcp-oauth', 'files', { ...login, tokens: { access_token: 'AT-2' } });
  await store.put('tool', 'marker', {});
  for (let i = 0; i < 100 && mirror.get('tool', 'marker') === undefined; i++) await flush();
  assert.equal(changes, 2, 'the refresh was no change; the tool item was');
  assert.equal(mirror.get('mcp-oauth', 'files'), true, 'the copy holds no token');
  await store.delete('mcp-oauth', 'files');
  await waitFor(undefined);
  assert.equal(changes, 3, 'the logout');
  await store.put('mcp-oauth', 'files', login);
  await mirror.refresh();
  assert.equal(mirror.get('mcp-oauth', 'files'), true, 'a full read agrees');
  controller.abort();
  store.close();
});
