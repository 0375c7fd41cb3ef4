import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryConfigStore, type ConfigChange, type ConfigStore } from '../config/index.js';
import { ToolbusError } from '../errors/index.js';
import type { JsonValue } from '../schema/index.js';
import {
  AccessPolicy,
  type AccessDeniedEvent,
  type AccessPolicyOptions,
  type Admission,
} from './access-policy.js';
import { DEFAULT_MAX_IN_FLIGHT, hashToken, newPrincipalToken, type Principal } from './principal.js';
import { parseRate } from './rate-limit.js';

const ADMIN_TOKEN = 'owner-secret-token';

/** Polls `check` every few ms until it holds, failing after `timeoutMs`. */
async function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 2_000,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Writes `principal/NAME` with a fresh token's hash; resolves with the token. */
async function addKey(
  store: ConfigStore,
  name: string,
  fields: { [key: string]: JsonValue } = {},
): Promise<string> {
  const token = newPrincipalToken();
  // Values are JSON text or a parsed value; use the text form, as the CLI writes it.
  await store.put(
    'principal',
    name,
    JSON.stringify({ roles: ['caller'], tokenHash: hashToken(token), ...fields }),
  );
  return token;
}

/** A started policy over a new memory store, closed when the test ends. */
async function setup(
  t: TestContext,
  options: Omit<AccessPolicyOptions, 'store'> = {},
  store: ConfigStore = new MemoryConfigStore(),
): Promise<{ store: ConfigStore; policy: AccessPolicy }> {
  const policy = new AccessPolicy({ adminToken: ADMIN_TOKEN, ...options, store });
  t.after(async () => {
    policy.close();
    await store.close();
  });
  await policy.start();
  return { store, policy };
}

/** A memory store whose watch never delivers a change: only re-reads see new items. */
function deafStore(): MemoryConfigStore & ConfigStore {
  const store = new MemoryConfigStore();
  store.watch = (options = {}) => ({
    [Symbol.asyncIterator]: (): AsyncIterator<ConfigChange> => ({
      next: () =>
        new Promise((resolve) => {
          const done = (): void => resolve({ done: true, value: undefined });
          if (options.signal?.aborted) done();
          else options.signal?.addEventListener('abort', done, { once: true });
        }),
      return: () => Promise.resolve({ done: true, value: undefined }),
    }),
  });
  return store;
}

function key(name: string, fields: Partial<Principal> = {}): Principal {
  return { name, roles: ['caller'], via: 'key', ...fields };
}

function refused(admission: Admission): Extract<Admission, { ok: false }> {
  assert.equal(admission.ok, false, 'refused');
  return admission as Extract<Admission, { ok: false }>;
}

function admitted(admission: Admission): Extract<Admission, { ok: true }> {
  assert.equal(admission.ok, true, `admitted, got ${JSON.stringify(admission)}`);
  return admission as Extract<Admission, { ok: true }>;
}

describe('AccessPolicy construction', () => {
  test('refuses no options at all, and an empty admin token alone', () => {
    for (const options of [{}, { adminToken: '' }, { onDenied: () => undefined }]) {
      assert.throws(
        () => new AccessPolicy(options),
        (error: unknown) =>
          error instanceof ToolbusError &&
          error.code === 'usage' &&
          /admin token.*open: true/.test(error.message),
      );
    }
  });

  test('open: true makes any request the admin', async () => {
    const policy = new AccessPolicy({ open: true });
    try {
      await policy.start();
      assert.equal(policy.open, true);
      for (const header of [undefined, '', 'Bearer nonsense', 'Basic abc']) {
        const principal = await policy.authenticate(header);
        assert.equal(principal?.name, 'admin');
        assert.deepEqual(principal?.roles, ['admin', 'caller', 'impersonate']);
        assert.equal(principal?.via, 'none');
      }
    } finally {
      policy.close();
    }
  });
});

describe('authenticate', () => {
  test('the admin token is principal admin with roles admin, caller and impersonate', async (t) => {
    const { policy } = await setup(t);
    assert.equal(policy.open, false);
    for (const header of [`Bearer ${ADMIN_TOKEN}`, `bearer ${ADMIN_TOKEN}`, `  BEARER   ${ADMIN_TOKEN}  `]) {
      const principal = await policy.authenticate(header);
      assert.deepEqual(principal, { name: 'admin', roles: ['admin', 'caller', 'impersonate'], via: 'token' });
    }
  });

  test('no header, another scheme, a wrong or a near token: undefined', async (t) => {
    const { policy } = await setup(t);
    for (const header of [
      undefined,
      '',
      'Bearer',
      'Bearer ',
      ADMIN_TOKEN,
      `Basic ${ADMIN_TOKEN}`,
      'Bearer wrong-token',
      `Bearer ${ADMIN_TOKEN}x`,
      `Bearer ${ADMIN_TOKEN.slice(0, -1)}`,
    ]) {
      assert.equal(await policy.authenticate(header), undefined, String(header));
    }
  });

  test('an admin token without a store works, other tokens are undefined', async () => {
    const policy = new AccessPolicy({ adminToken: ADMIN_TOKEN });
    await policy.start();
    assert.equal((await policy.authenticate(`Bearer ${ADMIN_TOKEN}`))?.name, 'admin');
    assert.equal(await policy.authenticate('Bearer tbk_other'), undefined);
    policy.close();
  });

  test('a stored key authenticates with its roles, user, tools and quotas', async (t) => {
    const store = new MemoryConfigStore();
    const token = await addKey(store, 'ci-bot', {
      roles: ['caller', 'approver'],
      user: 'alice',
      tools: ['tell-*'],
      rate: '20/s',
      maxInFlight: 3,
    });
    const { policy } = await setup(t, {}, store);
    const principal = await policy.authenticate(`Bearer ${token}`);
    assert.ok(principal);
    assert.equal(principal.name, 'ci-bot');
    assert.equal(principal.via, 'key');
    assert.deepEqual(principal.roles, ['caller', 'approver']);
    assert.equal(principal.user, 'alice');
    assert.deepEqual(principal.tools, ['tell-*']);
    assert.equal(principal.rate?.text, '20/s');
    assert.equal(principal.maxInFlight, 3);
    assert.equal(await policy.authenticate(`Bearer ${token}x`), undefined);
    assert.deepEqual(policy.problems(), []);
  });

  test('the store holds only the hash: the hash itself is no token', async (t) => {
    const store = new MemoryConfigStore();
    const token = await addKey(store, 'ci-bot');
    const { policy } = await setup(t, {}, store);
    assert.equal(await policy.authenticate(`Bearer ${hashToken(token)}`), undefined);
  });

  test('a key added after start() works at once (re-read on a miss)', async (t) => {
    const store = deafStore();
    const { policy } = await setup(t, {}, store);
    const token = await addKey(store, 'late');
    const principal = await policy.authenticate(`Bearer ${token}`);
    assert.equal(principal?.name, 'late');
  });

  test('misses re-read the store at most once a second', async (t) => {
    const store = deafStore();
    const { policy } = await setup(t, {}, store);
    assert.equal(await policy.authenticate('Bearer unknown-token'), undefined);
    // The miss above just re-read the store, and the watch delivers nothing: the new key waits.
    const token = await addKey(store, 'late');
    assert.equal(await policy.authenticate(`Bearer ${token}`), undefined);
  });

  test('a key added after start() is seen by the watch too', async (t) => {
    const { store, policy } = await setup(t);
    // Use up the re-read on a miss, so only the watch can bring the key in.
    assert.equal(await policy.authenticate('Bearer unknown-token'), undefined);
    const token = await addKey(store, 'watched');
    // Under a second, so a second re-read on a miss cannot be what finds it.
    await waitFor(
      async () => (await policy.authenticate(`Bearer ${token}`))?.name === 'watched',
      'the watched key',
      800,
    );
  });

  test('a removed key stops working once the store change is seen', async (t) => {
    const store = new MemoryConfigStore();
    const token = await addKey(store, 'gone-soon');
    const { policy } = await setup(t, {}, store);
    assert.equal((await policy.authenticate(`Bearer ${token}`))?.name, 'gone-soon');
    assert.equal(await store.delete('principal', 'gone-soon'), true);
    await waitFor(
      async () => (await policy.authenticate(`Bearer ${token}`)) === undefined,
      'the key to stop working',
    );
  });

  test('a changed key takes its new roles', async (t) => {
    const store = new MemoryConfigStore();
    const token = await addKey(store, 'bot');
    const { policy } = await setup(t, {}, store);
    assert.deepEqual((await policy.authenticate(`Bearer ${token}`))?.roles, ['caller']);
    await store.put('principal', 'bot', { roles: ['approver'], tokenHash: hashToken(token) });
    await waitFor(
      async () => (await policy.authenticate(`Bearer ${token}`))?.roles.join() === 'approver',
      'the new roles',
    );
  });

  test('a malformed principal item cannot log in and is listed in problems()', async (t) => {
    const store = new MemoryConfigStore();
    const token = newPrincipalToken();
    await store.put('principal', 'broken', { roles: ['root'], tokenHash: hashToken(token) });
    await store.put('principal', 'admin', { roles: ['caller'], tokenHash: hashToken(token) });
    const good = await addKey(store, 'good');
    const { policy } = await setup(t, {}, store);
    assert.equal(await policy.authenticate(`Bearer ${token}`), undefined);
    assert.equal((await policy.authenticate(`Bearer ${good}`))?.name, 'good');
    const problems = policy.problems();
    assert.deepEqual(problems.map((p) => p.key).sort(), ['principal/admin', 'principal/broken']);
    assert.match(problems.find((p) => p.key === 'principal/broken')!.message, /'root'/);
  });
});

describe('can', () => {
  test('permissions per role', async (t) => {
    const { policy } = await setup(t);
    const admin = (await policy.authenticate(`Bearer ${ADMIN_TOKEN}`))!;
    const caller = key('c');
    const approver = key('a', { roles: ['approver'] });
    const impersonator = key('i', { roles: ['impersonate'] });
    const permissions = ['read-tools', 'call-tools', 'ask-agent', 'config', 'audit', 'metrics'] as const;
    const table = (p: Principal) => permissions.filter((permission) => policy.can(p, permission));
    assert.deepEqual(table(admin), [...permissions]);
    assert.deepEqual(table(caller), ['read-tools', 'call-tools', 'ask-agent']);
    assert.deepEqual(table(approver), ['read-tools']);
    assert.deepEqual(table(impersonator), []);
    assert.equal(policy.can(caller, 'config'), false);
    assert.equal(policy.can(approver, 'call-tools'), false);
    assert.deepEqual(policy.rolesFor('call-tools'), ['admin', 'caller']);
    assert.deepEqual(policy.rolesFor('config'), ['admin']);
  });
});

describe('allows and toolGlobs', () => {
  test("a principal's own globs", async (t) => {
    const { policy } = await setup(t);
    const bot = key('bot', { tools: ['tell-*', 'get-weather'] });
    assert.equal(policy.allows(bot, 'tell-joke'), true);
    assert.equal(policy.allows(bot, 'get-weather'), true);
    assert.equal(policy.allows(bot, 'get-weather-2'), false);
    assert.equal(policy.allows(bot, 'delete-all'), false);
    assert.equal(policy.allows(key('free'), 'delete-all'), true, 'no globs: every tool');
    assert.equal(policy.allows(key('none', { tools: [] }), 'tell-joke'), false, 'an empty list: no tool');
    assert.deepEqual(policy.toolGlobs(bot), ['tell-*', 'get-weather']);
    assert.equal(policy.toolGlobs(key('free')), undefined);
  });

  test('a role/caller item limits callers, not admins', async (t) => {
    const store = new MemoryConfigStore();
    await store.put('role', 'caller', { tools: ['get-*'] });
    const { policy } = await setup(t, {}, store);
    const caller = key('c');
    assert.equal(policy.allows(caller, 'get-weather'), true);
    assert.equal(policy.allows(caller, 'tell-joke'), false);
    assert.deepEqual(policy.toolGlobs(caller), ['get-*']);
    // Its own globs narrow further: both must allow the tool.
    const narrow = key('n', { tools: ['tell-*', 'get-time'] });
    assert.equal(policy.allows(narrow, 'get-time'), true);
    assert.equal(policy.allows(narrow, 'tell-joke'), false);
    assert.equal(policy.allows(narrow, 'get-weather'), false);
    // The admin role has no item: every tool.
    const admin = (await policy.authenticate(`Bearer ${ADMIN_TOKEN}`))!;
    assert.equal(policy.allows(admin, 'tell-joke'), true);
    assert.equal(policy.toolGlobs(admin), undefined);
    // Two restricted roles: either one's tools.
    const both = key('both', { roles: ['caller', 'approver'] });
    // Before its item, the approver role allows every tool, so `both` does too.
    assert.equal(policy.allows(both, 'delete-all'), true);
    await store.put('role', 'approver', { tools: ['tell-*'] });
    await waitFor(() => !policy.allows(both, 'delete-all'), 'role/approver');
    assert.equal(policy.allows(both, 'tell-joke'), true);
    assert.equal(policy.allows(both, 'get-weather'), true);
    assert.equal(policy.allows(both, 'delete-all'), false);
    assert.deepEqual(policy.toolGlobs(both), ['get-*', 'tell-*']);
  });

  test("impersonate does not widen a caller's tools, and the caller role's limits do not bind an admin", async (t) => {
    const store = new MemoryConfigStore();
    await store.put('role', 'caller', { tools: ['get-*'], rate: '1/h', maxInFlight: 1 });
    const { policy } = await setup(t, {}, store);
    const backend = key('backend', { roles: ['caller', 'impersonate'] });
    assert.equal(policy.allows(backend, 'get-weather'), true);
    assert.equal(
      policy.allows(backend, 'tell-joke'),
      false,
      'role/impersonate has no item, yet allows nothing more',
    );
    assert.deepEqual(policy.toolGlobs(backend), ['get-*']);
    admitted(policy.admit(backend, 'get-weather', 0));
    assert.equal(refused(policy.admit(backend, 'get-weather', 0)).rule, 'in-flight');
    const admin = (await policy.authenticate(`Bearer ${ADMIN_TOKEN}`))!;
    assert.equal(policy.allows(admin, 'tell-joke'), true);
    for (let i = 0; i < 5; i++) admitted(policy.admit(admin, 'tell-joke', 0));
  });

  test('a role item written while running applies once seen', async (t) => {
    const { store, policy } = await setup(t);
    const caller = key('c');
    assert.equal(policy.allows(caller, 'tell-joke'), true);
    await store.put('role', 'caller', { tools: 'get-*' });
    await waitFor(() => !policy.allows(caller, 'tell-joke'), 'role/caller to apply');
    assert.equal(policy.allows(caller, 'get-weather'), true);
    await store.delete('role', 'caller');
    await waitFor(() => policy.allows(caller, 'tell-joke'), 'role/caller to go');
  });

  test('a malformed role item fails closed and is listed in problems()', async (t) => {
    const store = new MemoryConfigStore();
    await store.put('role', 'caller', { tools: 42 });
    await store.put('quota', 'tell-joke', { per: 'all' });
    const { policy } = await setup(t, {}, store);
    const caller = key('c');
    assert.equal(policy.allows(caller, 'tell-joke'), false);
    assert.equal(policy.allows(caller, 'anything'), false);
    assert.deepEqual(policy.toolGlobs(caller), []);
    const problems = policy.problems();
    assert.deepEqual(problems.map((p) => p.key).sort(), ['quota/tell-joke', 'role/caller']);
    assert.match(
      problems.find((p) => p.key === 'role/caller')!.message,
      /role\/caller: 'tools' must be a list/,
    );
    // The malformed quota does not apply: calls of the tool are not limited by it.
    for (let i = 0; i < 5; i++) admitted(policy.admit(caller, 'tell-joke', 0)).release();
    // Fixed, the problem goes.
    await store.put('role', 'caller', { tools: ['tell-*'] });
    await waitFor(() => policy.allows(caller, 'tell-joke'), 'the fixed role item');
    assert.deepEqual(
      policy.problems().map((p) => p.key),
      ['quota/tell-joke'],
    );
  });
});

describe('userFor', () => {
  test('own user, the default, impersonation and its refusal', async (t) => {
    const { policy } = await setup(t);
    const alice = key('alice-bot', { user: 'alice' });
    assert.equal(policy.userFor(alice, undefined, 'default-user'), 'alice');
    assert.equal(policy.userFor(alice, 'alice', 'default-user'), 'alice');
    assert.equal(policy.userFor(key('nobody'), undefined, 'default-user'), 'default-user');
    const impersonator = key('proxy', { roles: ['caller', 'impersonate'], user: 'proxy' });
    assert.equal(policy.userFor(impersonator, 'bob', 'default-user'), 'bob');
    const admin = (await policy.authenticate(`Bearer ${ADMIN_TOKEN}`))!;
    assert.equal(policy.userFor(admin, 'carol', 'default-user'), 'carol');
    assert.equal(policy.userFor(admin, undefined, 'default-user'), 'default-user');
    assert.throws(
      () => policy.userFor(alice, 'bob', 'default-user'),
      (error: unknown) =>
        error instanceof ToolbusError &&
        error.code === 'forbidden' &&
        error.message.includes("'impersonate'") &&
        error.message.includes("'alice-bot'") &&
        error.message.includes("'bob'") &&
        error.message.includes("the calls are for 'alice'"),
    );
  });
});

describe('admit', () => {
  test("a principal's rate: refused in the same ms, admitted again later", async (t) => {
    const store = new MemoryConfigStore();
    const token = await addKey(store, 'fast', { rate: '2/s' });
    const { policy } = await setup(t, {}, store);
    const principal = (await policy.authenticate(`Bearer ${token}`))!;
    const now = 1_000_000;
    admitted(policy.admit(principal, undefined, now)).release();
    admitted(policy.admit(principal, 'tell-joke', now)).release();
    const third = refused(policy.admit(principal, undefined, now));
    assert.equal(third.code, 'rate-limited');
    assert.equal(third.rule, 'rate');
    assert.ok(third.retryAfterMs > 0);
    assert.equal(third.retryAfterMs, 500);
    assert.match(third.message, /principal 'fast' is over its rate of 2\/s; try again in 1 s/);
    assert.equal(refused(policy.admit(principal, undefined, now + 499)).rule, 'rate');
    admitted(policy.admit(principal, undefined, now + 500)).release();
    // Another principal has its own bucket.
    admitted(policy.admit(key('other', { rate: parseRate('2/s') }), undefined, now)).release();
  });

  test("the strictest of its roles' rates when the principal sets none", async (t) => {
    const store = new MemoryConfigStore();
    await store.put('role', 'caller', { rate: '1/m' });
    await store.put('role', 'approver', { rate: '100/s' });
    const { policy } = await setup(t, {}, store);
    const both = key('both', { roles: ['approver', 'caller'] });
    admitted(policy.admit(both, undefined, 0)).release();
    const second = refused(policy.admit(both, undefined, 0));
    assert.equal(second.rule, 'rate');
    assert.match(second.message, /1\/m/);
    assert.equal(second.retryAfterMs, 60_000);
    // Its own rate wins over its roles'.
    const own = key('own', { rate: parseRate('3/s') });
    for (let i = 0; i < 3; i++) admitted(policy.admit(own, undefined, 0)).release();
    refused(policy.admit(own, undefined, 0));
  });

  test('a tool quota per principal', async (t) => {
    const store = new MemoryConfigStore();
    await store.put('quota', 'tell-joke', { rate: '1/m' });
    const { policy } = await setup(t, {}, store);
    const a = key('a');
    const b = key('b');
    const now = 50_000;
    admitted(policy.admit(a, 'tell-joke', now)).release();
    const again = refused(policy.admit(a, 'tell-joke', now));
    assert.equal(again.code, 'rate-limited');
    assert.equal(again.rule, 'quota');
    assert.ok(again.retryAfterMs > 0);
    assert.match(again.message, /tool 'tell-joke' is over its quota of 1\/m for principal 'a'/);
    admitted(policy.admit(b, 'tell-joke', now)).release();
    admitted(policy.admit(a, 'get-weather', now)).release();
    admitted(policy.admit(a, undefined, now)).release();
    admitted(policy.admit(a, 'tell-joke', now + 60_000)).release();
  });

  test('a tool quota shared by all', async (t) => {
    const store = new MemoryConfigStore();
    await store.put('quota', 'tell-joke', { rate: '2/m', per: 'all' });
    const { policy } = await setup(t, {}, store);
    const now = 50_000;
    admitted(policy.admit(key('a'), 'tell-joke', now)).release();
    admitted(policy.admit(key('b'), 'tell-joke', now)).release();
    const third = refused(policy.admit(key('c'), 'tell-joke', now));
    assert.equal(third.rule, 'quota');
    assert.match(third.message, /all callers together/);
    assert.equal(third.retryAfterMs, 30_000);
  });

  test("a call the tool quota refuses costs none of the principal's own rate", async (t) => {
    const store = new MemoryConfigStore();
    await store.put('quota', 'tell-joke', { rate: '1/h', per: 'all' });
    const { policy } = await setup(t, {}, store);
    const now = 50_000;
    const p = key('p', { rate: parseRate('2/h') });
    admitted(policy.admit(p, 'tell-joke', now)).release();
    for (let i = 0; i < 5; i++) assert.equal(refused(policy.admit(p, 'tell-joke', now)).rule, 'quota');
    admitted(policy.admit(p, 'other-tool', now)).release();
    assert.equal(refused(policy.admit(p, 'other-tool', now)).rule, 'rate');
  });

  test('the in-flight cap: refused at maxInFlight, release frees one slot once', async (t) => {
    const store = new MemoryConfigStore();
    const token = await addKey(store, 'busy', { maxInFlight: 2 });
    const { policy } = await setup(t, {}, store);
    const principal = (await policy.authenticate(`Bearer ${token}`))!;
    const first = admitted(policy.admit(principal, 'tell-joke'));
    const second = admitted(policy.admit(principal, 'tell-joke'));
    const third = refused(policy.admit(principal, 'tell-joke'));
    assert.equal(third.code, 'too-many-requests');
    assert.equal(third.rule, 'in-flight');
    assert.ok(third.retryAfterMs > 0);
    assert.match(third.message, /already has 2 calls in flight.*maxInFlight 2/);
    first.release();
    first.release(); // twice: frees one slot only
    const fourth = admitted(policy.admit(principal, 'tell-joke'));
    assert.equal(
      refused(policy.admit(principal, 'tell-joke')).rule,
      'in-flight',
      'a double release freed two slots',
    );
    second.release();
    fourth.release();
    // All released: two fit again.
    admitted(policy.admit(principal));
    admitted(policy.admit(principal));
    refused(policy.admit(principal));
  });

  test("a role's maxInFlight, and the default cap of keys", async (t) => {
    const store = new MemoryConfigStore();
    await store.put('role', 'approver', { maxInFlight: 1 });
    const { policy } = await setup(t, {}, store);
    const approver = key('appr', { roles: ['approver'] });
    admitted(policy.admit(approver));
    assert.equal(refused(policy.admit(approver)).rule, 'in-flight');
    const caller = key('c');
    for (let i = 0; i < DEFAULT_MAX_IN_FLIGHT; i++) admitted(policy.admit(caller));
    assert.equal(refused(policy.admit(caller)).rule, 'in-flight');
  });

  test('a refused call does not count as in flight', async (t) => {
    const { policy } = await setup(t);
    const principal = key('r', { rate: parseRate('1/h'), maxInFlight: 1 });
    const first = admitted(policy.admit(principal, undefined, 0));
    first.release();
    assert.equal(refused(policy.admit(principal, undefined, 0)).rule, 'rate');
    // Had the refusal taken the one slot, this would be 'in-flight'.
    admitted(policy.admit(principal, undefined, 3_600_000));
  });

  test('the admin token is unlimited', async (t) => {
    const { policy } = await setup(t);
    const admin = (await policy.authenticate(`Bearer ${ADMIN_TOKEN}`))!;
    for (let i = 0; i < DEFAULT_MAX_IN_FLIGHT * 3; i++) admitted(policy.admit(admin, 'tell-joke', 0));
  });
});

describe('denied', () => {
  test('tells the onDenied hook', async (t) => {
    const events: AccessDeniedEvent[] = [];
    const { policy } = await setup(t, { onDenied: (event) => void events.push(event) });
    const event: AccessDeniedEvent = {
      status: 403,
      code: 'forbidden',
      reason: 'no',
      rule: 'role',
      method: 'GET',
      path: '/api/v1/config',
      remote: '127.0.0.1',
    };
    policy.denied(event);
    assert.deepEqual(events, [event]);
  });
});
