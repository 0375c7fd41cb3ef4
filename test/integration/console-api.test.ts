/**
 * The web console's backend on a real gateway (127.0.0.1, port 0): its static files (public, inside
 * their folder only, with a strict CSP, Host/Origin still checked, 503 while not built), the system,
 * services, detailed tools, config types and config check routes, and the live calls (listed and
 * streamed, within each principal's policy). And `/api/v1/system` and `/api/v1/services` through
 * `toolbus up`'s own wiring, embedded, with the example joke service.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { homeIo } from '../support/cli.js';
import { z } from 'zod';
import { FunctionTool, LiveToolSet, MemoryConfigStore } from '../../src/index.js';
import {
  AccessPolicy,
  LiveCalls,
  createGateway,
  type GatewayInspector,
  type GatewayOptions,
} from '../../src/gateway/index.js';
import { hashToken } from '../../src/policy/index.js';
import { CONSOLE_CONTENT_SECURITY_POLICY } from '../../src/gateway/console-route.js';
import { readServerSentEvents } from '../../src/cli/gateway-client.js';
import { checkConfigItem } from '../../src/cli/config-check.js';
import { startSystem } from '../../src/cli/system.js';
import { rawRequest } from '../support/raw-http.js';

const ADMIN = 'console-admin-token-0123456789abcdef';
const BOB = 'console-bob-token-0123456789abcdef01';

const echo = new FunctionTool(async ({ text }: { text: string }) => `echo: ${text}`, {
  name: 'echo',
  description: 'Echo the text',
  parameters: z.object({ text: z.string().describe('What to echo'), loud: z.boolean().optional() }),
});
const secret = new FunctionTool(async () => 'the secret', {
  name: 'secret',
  description: 'Only for admins',
  parameters: z.object({}),
});
const steps = new FunctionTool(
  async (_args: Record<string, never>, ctx) => {
    ctx.progress?.({ progress: 1, total: 2, message: 'half way' });
    await new Promise((resolve) => setTimeout(resolve, 20));
    ctx.progress?.({ progress: 2, total: 2 });
    return 'all done';
  },
  { name: 'steps', description: 'Works in two steps', parameters: z.object({}) },
);
const freeForm = new FunctionTool(async () => 'ok', {
  name: 'free-form',
  description: 'Takes any object',
  parameters: { type: 'object', properties: { data: { type: 'object' } } },
});
const guarded = new FunctionTool(async () => 'deleted', {
  name: 'delete-all',
  description: 'Deletes everything',
  parameters: z.object({}),
  needsApproval: true,
  annotations: { destructive: true },
});

const INSPECTOR: GatewayInspector = {
  system: () => ({
    version: '9.9.9',
    bus: { kind: 'memory', description: 'in-process (memory)', connected: true },
    store: { description: 'SQLite at .toolbus/config.db' },
  }),
  services: () => [
    {
      id: 'echo-service',
      requestQueue: 'request:echo',
      responseQueue: 'response:echo',
      configParams: [{ name: 'style', required: false }],
      delivery: 'request-response',
      source: 'config',
      instances: [{ id: 'i-1', lastSeen: 1_733_300_000_000 }],
      tools: ['echo', 'secret'],
    },
  ],
  toolOrigin: (name) =>
    name === 'echo'
      ? { source: 'config', key: 'tool/echo', problemKey: 'tool/echo' }
      : name === 'steps'
        ? { source: 'announced', problemKey: 'announced/steps-service/steps' }
        : undefined,
};

interface Started {
  url: string;
  store: MemoryConfigStore;
  dir: string;
  gateway: ReturnType<typeof createGateway>;
}

/** A console folder with an index, a script, a stylesheet, a text file and a symlink out of it. */
async function consoleFolder(t: TestContext): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'toolbus-console-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  const dir = join(root, 'console');
  await mkdir(join(dir, 'fonts'), { recursive: true });
  await writeFile(
    join(dir, 'index.html'),
    '<!doctype html><title>toolbus</title><script src="/console/console.js"></script>',
  );
  await writeFile(join(dir, 'console.js'), 'console.log("console");');
  await writeFile(join(dir, 'console.css'), 'body { margin: 0 }');
  await writeFile(join(dir, 'fonts', 'inter.woff2'), Buffer.from([0x77, 0x4f, 0x46, 0x32]));
  await writeFile(join(dir, 'notes.txt'), 'not a console file');
  await writeFile(join(root, 'secret.js'), 'the secret outside the folder');
  await symlink(join(root, 'secret.js'), join(dir, 'leak.js'));
  return dir;
}

async function start(t: TestContext, extra: Partial<GatewayOptions> = {}): Promise<Started> {
  const store = new MemoryConfigStore();
  // Bob calls tools as user 'bob', only echo and steps, and may not act for other users.
  await store.put('principal', 'bob', {
    roles: ['caller'],
    tokenHash: hashToken(BOB),
    tools: ['echo', 'steps'],
  });
  const policy = new AccessPolicy({ adminToken: ADMIN, store });
  await policy.start();
  const live = new LiveCalls();
  const dir = await consoleFolder(t);
  const gateway = createGateway({
    tools: new LiveToolSet([echo, secret, steps, freeForm, guarded], { hooks: live.toolSetHooks() }),
    store,
    policy,
    liveCalls: live,
    consoleDir: dir,
    inspect: { ...INSPECTOR, checkConfig: (type, key, value) => checkConfigItem(store, type, key, value) },
    allowlist: { commands: ['npx'], env: [] },
    problems: () => [
      { key: 'tool/echo', message: 'its description is short', severity: 'warning' },
      { key: 'tool/other', message: 'not about echo' },
    ],
    heartbeatMs: 50,
    ...extra,
  });
  const url = await gateway.listen({ port: 0 });
  t.after(async () => {
    await gateway.close();
    policy.close();
    await store.close();
  });
  return { url, store, dir, gateway };
}

function api(url: string, path: string, token = ADMIN, init: RequestInit = {}): Promise<Response> {
  return fetch(`${url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers },
  });
}

async function body(res: Response): Promise<Record<string, unknown>> {
  return (await res.json()) as Record<string, unknown>;
}

function invoke(url: string, tool: string, args: unknown, token = ADMIN, user?: string): Promise<Response> {
  return api(url, `/api/v1/tools/${tool}/invoke`, token, {
    method: 'POST',
    body: JSON.stringify(args),
    ...(user !== undefined ? { headers: { 'x-toolbus-user': user } } : {}),
  });
}

interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

/** Opens the live-call stream; `next(n)` reads until `n` events have come (bounded by 10 s). */
async function openLiveStream(url: string, token = ADMIN) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 10_000);
  const res = await api(url, '/api/v1/live-calls/events', token, { signal: controller.signal });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
  const events: SseEvent[] = [];
  const iterator = readServerSentEvents(res.body!)[Symbol.asyncIterator]();
  return {
    events,
    async next(count: number): Promise<SseEvent[]> {
      while (events.length < count) {
        const { value, done } = await iterator.next();
        if (done) break;
        events.push({ event: value.event, data: JSON.parse(value.data) as Record<string, unknown> });
      }
      return events;
    },
    /** Resolves when the server ends the stream. */
    async ended(): Promise<void> {
      for (;;) if ((await iterator.next()).done) return;
    },
    close(): void {
      clearTimeout(timer);
      controller.abort();
    },
  };
}

describe('web console: static files', () => {
  test('GET / serves index.html without a token, with the CSP, nosniff, no-referrer and no-cache', async (t) => {
    const { url, dir } = await start(t);
    const res = await fetch(`${url}/`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(await res.text(), await readFile(join(dir, 'index.html'), 'utf8'));
    assert.equal(res.headers.get('content-security-policy'), CONSOLE_CONTENT_SECURITY_POLICY);
    assert.match(CONSOLE_CONTENT_SECURITY_POLICY, /default-src 'self'; script-src 'self'/);
    assert.match(CONSOLE_CONTENT_SECURITY_POLICY, /frame-ancestors 'none'/);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
    assert.equal(res.headers.get('cache-control'), 'no-cache');

    const head = await fetch(`${url}/`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), '');
    assert.equal(head.headers.get('content-security-policy'), CONSOLE_CONTENT_SECURITY_POLICY);

    // Unchanged since the browser's copy: 304, no body.
    const again = await fetch(`${url}/`, { headers: { 'if-none-match': res.headers.get('etag')! } });
    assert.equal(again.status, 304);
  });

  test('GET /console/<file> serves the assets with their content types; an unknown one is 404', async (t) => {
    const { url } = await start(t);
    const js = await fetch(`${url}/console/console.js`);
    assert.equal(js.status, 200);
    assert.match(js.headers.get('content-type') ?? '', /^text\/javascript/);
    assert.equal(await js.text(), 'console.log("console");');
    assert.equal(js.headers.get('content-security-policy'), CONSOLE_CONTENT_SECURITY_POLICY);
    const css = await fetch(`${url}/console/console.css`);
    assert.match(css.headers.get('content-type') ?? '', /^text\/css/);
    const font = await fetch(`${url}/console/fonts/inter.woff2`);
    assert.equal(font.status, 200);
    assert.equal(font.headers.get('content-type'), 'font/woff2');
    const missing = await fetch(`${url}/console/nope.js`);
    assert.equal(missing.status, 404);
    assert.equal(((await body(missing))['error'] as { code: string }).code, 'not-found');
  });

  test('nothing outside the folder is served: .. paths, a symlink out of it, hidden and unlisted files', async (t) => {
    const { url } = await start(t);
    for (const path of [
      '/console/..%2Fsecret.js',
      '/console/fonts/..%2F..%2Fsecret.js',
      '/console/%2e%2e/secret.js',
      '/console/leak.js', // a symlink to ../secret.js
      '/console/notes.txt', // not a kind of file the console has
      '/console/.hidden.js',
      '/console/fonts',
    ]) {
      const res = await fetch(`${url}${path}`);
      assert.equal(res.status, 404, path);
      assert.doesNotMatch(await res.text(), /the secret/, path);
    }
    // A raw `..` (which fetch would resolve itself) never leaves the routes either.
    const raw = await rawRequest(url, '/console/../secret.js');
    assert.equal(raw.status, 404);
    assert.doesNotMatch(raw.body, /the secret/);
  });

  test('Host and Origin checks still apply to the public console routes; the API still needs the token', async (t) => {
    const { url } = await start(t);
    const foreign = await rawRequest(url, '/', { headers: { origin: 'https://evil.example' } });
    assert.equal(foreign.status, 403);
    assert.match(foreign.body, /Origin/);
    const rebinding = await rawRequest(url, '/console/console.js', { headers: { host: 'evil.example' } });
    assert.equal(rebinding.status, 403);
    const crossSite = await rawRequest(url, '/console/console.js', {
      headers: { 'sec-fetch-site': 'cross-site' },
    });
    assert.equal(crossSite.status, 403);
    assert.equal((await fetch(`${url}/api/v1/system`)).status, 401);
    assert.equal((await fetch(`${url}/api/v1/live-calls`)).status, 401);
  });

  test('not built: GET / is 503 text/plain saying to run the build; without consoleDir / stays 404', async (t) => {
    const missing = await start(t, { consoleDir: join(tmpdir(), 'toolbus-no-such-console-dir') });
    const res = await fetch(`${missing.url}/`);
    assert.equal(res.status, 503);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    assert.equal((await res.text()).trim(), 'the web console is not built: run `npm run build`');

    const empty = await start(t);
    await rm(join(empty.dir, 'index.html'));
    assert.equal((await fetch(`${empty.url}/`)).status, 503, 'a folder without index.html is not built');

    const none = await start(t, { consoleDir: undefined });
    assert.equal((await fetch(`${none.url}/`)).status, 404);
    assert.equal((await fetch(`${none.url}/console/console.js`)).status, 404);
  });
});

describe('web console: system, services, tools and config', () => {
  test('GET /api/v1/system: version, bus, store, counts, readiness and 60 buckets of rates', async (t) => {
    const { url } = await start(t);
    await invoke(url, 'echo', { text: 'one' });
    const res = await api(url, '/api/v1/system');
    assert.equal(res.status, 200);
    const system = await body(res);
    assert.equal(system['version'], '9.9.9');
    assert.equal(typeof system['uptimeMs'], 'number');
    assert.deepEqual(system['bus'], { kind: 'memory', description: 'in-process (memory)', connected: true });
    assert.deepEqual(system['store'], { description: 'SQLite at .toolbus/config.db' });
    assert.equal(system['agent'], false);
    assert.deepEqual(system['counts'], { tools: 5, services: 1, problems: 2, callsInFlight: 0 });
    const ready = system['ready'] as {
      status: string;
      parts: Record<string, { ok: boolean; detail?: string }>;
    };
    assert.equal(ready.status, 'ready');
    assert.equal(ready.parts['store']?.ok, true);
    assert.equal(
      typeof ready.parts['store']?.detail,
      'string',
      'the details, as /ready answers with the token',
    );
    const rates = system['rates'] as {
      bucketMs: number;
      points: { at: number; calls: number; errors: number }[];
    };
    assert.equal(rates.bucketMs, 5000);
    assert.equal(rates.points.length, 60);
    assert.ok(
      rates.points.every((p, i) => i === 0 || p.at - rates.points[i - 1]!.at === 5000),
      'oldest first',
    );
    assert.equal(
      rates.points.reduce((n, p) => n + p.calls, 0),
      1,
    );
  });

  test('GET /api/v1/services lists the services, their tools filtered by the caller policy; 404 without an inspector', async (t) => {
    const { url } = await start(t);
    const admin = (await body(await api(url, '/api/v1/services')))['services'] as Record<string, unknown>[];
    assert.deepEqual(admin, INSPECTOR.services());
    const bob = (await body(await api(url, '/api/v1/services', BOB)))['services'] as { tools: string[] }[];
    assert.deepEqual(bob[0]!.tools, ['echo'], 'bob may not see secret');

    const bare = await start(t, { inspect: undefined });
    assert.equal((await api(bare.url, '/api/v1/system')).status, 404);
    assert.equal((await api(bare.url, '/api/v1/services')).status, 404);
  });

  test('GET /api/v1/tools?detail=1: source, key, strict schema, output schema, annotations, approval, problems', async (t) => {
    const { url } = await start(t);
    const plain = ((await body(await api(url, '/api/v1/tools')))['tools'] as Record<string, unknown>[])[0]!;
    assert.equal(plain['source'], undefined, 'without ?detail the listing is as before');
    const tools = (await body(await api(url, '/api/v1/tools?detail=1')))['tools'] as Record<
      string,
      unknown
    >[];
    const byName = new Map(tools.map((x) => [x['name'], x]));

    const e = byName.get('echo')!;
    assert.equal(e['source'], 'config');
    assert.equal(e['key'], 'tool/echo');
    assert.ok(e['parameters']);
    const strict = e['strictParameters'] as { required: string[]; additionalProperties: boolean };
    assert.deepEqual(strict.required, ['text', 'loud'], 'strict: every property required');
    assert.equal(strict.additionalProperties, false);
    assert.equal(e['needsApproval'], false);
    assert.deepEqual(e['problems'], [{ severity: 'warning', message: 'its description is short' }]);

    const s = byName.get('steps')!;
    assert.equal(s['source'], 'announced');
    assert.equal(s['key'], undefined);
    assert.deepEqual(s['problems'], []);

    const d = byName.get('delete-all')!;
    assert.equal(d['source'], 'code', 'a tool the inspector does not know is code');
    assert.equal(d['needsApproval'], true);
    assert.deepEqual(d['annotations'], { destructive: true });

    const f = byName.get('free-form')!;
    assert.equal(f['strictParameters'], null, 'strict mode cannot express a free-form object');
    assert.match(String(f['strictError']), /data/);

    const bob = (await body(await api(url, '/api/v1/tools?detail=1', BOB)))['tools'] as { name: string }[];
    assert.deepEqual(bob.map((x) => x.name).sort(), ['echo', 'steps']);
  });

  test('GET /api/v1/config lists the well-known types and the stored ones; it needs the config permission', async (t) => {
    const { url, store } = await start(t);
    await store.put('custom-type', 'x', { a: 1 });
    const res = await api(url, '/api/v1/config');
    assert.equal(res.status, 200);
    const { types } = (await body(res)) as { types: string[] };
    for (const type of ['tool', 'tool-service', 'mcp', 'resource', 'profile', 'principal', 'role', 'quota']) {
      assert.ok(types.includes(type), type);
    }
    assert.ok(types.includes('custom-type'));
    assert.equal(new Set(types).size, types.length, 'each type once');
    assert.equal((await api(url, '/api/v1/config', BOB)).status, 403);
  });

  test('POST /api/v1/config/{type}/{key}/check: what config put would say, nothing stored', async (t) => {
    const { url, store } = await start(t);
    const check = async (type: string, key: string, value: unknown) => {
      const res = await api(url, `/api/v1/config/${type}/${key}/check`, ADMIN, {
        method: 'POST',
        body: JSON.stringify(value),
      });
      assert.equal(res.status, 200);
      return ((await body(res)) as { findings: { skipped: boolean; message: string }[] }).findings;
    };
    const bad = await check('tool-service', 'broken', { 'request-queue': 42 });
    assert.equal(bad.length, 1);
    assert.equal(bad[0]!.skipped, true);
    assert.match(bad[0]!.message, /request-queue/);

    const refused = await check('mcp', 'fs', { command: 'rm', args: ['-rf', '/'] });
    assert.ok(
      refused.some((f) => f.skipped && /rm/.test(f.message)),
      JSON.stringify(refused),
    );

    const note = await check('tool', 'tell-joke', {
      type: 'tool-service',
      name: 'tell-joke',
      description: 'Tell a joke',
      service: 'joke-service',
      arguments: [],
    });
    assert.deepEqual(
      note.map((f) => f.skipped),
      [false],
      'a tool whose service is not there yet goes live later: a note',
    );

    assert.deepEqual(await check('mcp', 'ok', { command: 'npx', args: ['server'] }), []);
    assert.equal(await store.get('tool-service', 'broken'), undefined, 'a check stores nothing');

    const notJson = await api(url, '/api/v1/config/tool/x/check', ADMIN, { method: 'POST', body: '{' });
    assert.equal(notJson.status, 400);
    const forbidden = await api(url, '/api/v1/config/tool/x/check', BOB, { method: 'POST', body: '{}' });
    assert.equal(forbidden.status, 403);
  });
});

describe('web console: live calls', () => {
  test('a call through POST /invoke appears in /api/v1/live-calls and on the stream as running, then ok', async (t) => {
    const { url } = await start(t);
    const stream = await openLiveStream(url);
    t.after(() => stream.close());
    const res = await invoke(url, 'echo', { text: 'hello' });
    const { callId } = (await body(res)) as { callId: string };
    const events = await stream.next(2);
    assert.deepEqual(
      events.map((e) => [e.event, e.data['status'], e.data['callId']]),
      [
        ['call', 'running', callId],
        ['call', 'ok', callId],
      ],
    );
    assert.equal(events[1]!.data['content'], 'echo: hello');
    assert.equal(events[0]!.data['arguments'], '{"text":"hello"}');

    await invoke(url, 'secret', {});
    const list = await api(url, '/api/v1/live-calls?tool=echo');
    const { calls } = (await body(list)) as { calls: Record<string, unknown>[] };
    assert.equal(calls.length, 1);
    assert.equal(calls[0]!['callId'], callId);
    assert.equal(calls[0]!['status'], 'ok');
    assert.match(String(calls[0]!['caller']), /^http:admin@/);
    assert.equal(typeof calls[0]!['durationMs'], 'number');
    const all = (await body(await api(url, '/api/v1/live-calls?limit=1'))) as { calls: { tool: string }[] };
    assert.deepEqual(
      all.calls.map((c) => c.tool),
      ['secret'],
      'newest first, at most limit',
    );
    assert.equal((await api(url, '/api/v1/live-calls?limit=0')).status, 400);
    assert.equal((await api(url, '/api/v1/live-calls?limit=501')).status, 400);
  });

  test('progress of a running call reaches the stream as progress events', async (t) => {
    const { url } = await start(t);
    const stream = await openLiveStream(url);
    t.after(() => stream.close());
    await invoke(url, 'steps', {});
    const events = await stream.next(4);
    assert.deepEqual(
      events.map((e) => [e.event, e.data['status'] ?? e.data['progress']]),
      [
        ['call', 'running'],
        ['progress', 1],
        ['progress', 2],
        ['call', 'ok'],
      ],
    );
    assert.deepEqual(events[1]!.data, {
      callId: events[0]!.data['callId'],
      tool: 'steps',
      user: 'anonymous',
      progress: 1,
      total: 2,
      message: 'half way',
    });
  });

  test('a principal sees only the calls of tools its policy allows, for its own user', async (t) => {
    const { url } = await start(t);
    const bob = await openLiveStream(url, BOB);
    t.after(() => bob.close());
    assert.equal((await invoke(url, 'secret', {}, ADMIN, 'bob')).status, 200); // a tool bob may not use
    assert.equal((await invoke(url, 'echo', { text: 'for anonymous' })).status, 200); // another user's call
    assert.equal((await invoke(url, 'echo', { text: 'by bob' }, BOB)).status, 200);
    const events = await bob.next(2);
    assert.deepEqual(
      events.map((e) => [e.data['tool'], e.data['user'], e.data['arguments']]),
      [
        ['echo', 'bob', '{"text":"by bob"}'],
        ['echo', 'bob', '{"text":"by bob"}'],
      ],
    );
    const listed = (await body(await api(url, '/api/v1/live-calls', BOB))) as { calls: { tool: string }[] };
    assert.deepEqual(
      listed.calls.map((c) => c.tool),
      ['echo'],
    );
    const admin = (await body(await api(url, '/api/v1/live-calls'))) as { calls: { tool: string }[] };
    assert.deepEqual(
      admin.calls.map((c) => c.tool),
      ['echo', 'echo', 'secret'],
      'the admin sees every call',
    );
  });

  test('an open live-call stream ends when the gateway closes, without holding close() up', async (t) => {
    const { url, gateway } = await start(t);
    const stream = await openLiveStream(url);
    t.after(() => stream.close());
    let timer: NodeJS.Timeout | undefined;
    const closed = await Promise.race([
      gateway.close({ graceMs: 30_000 }).then(() => 'closed'),
      new Promise((resolve) => (timer = setTimeout(() => resolve('still waiting'), 5_000))),
    ]);
    clearTimeout(timer);
    assert.equal(closed, 'closed');
    await stream.ended();
  });

  test('without liveCalls the routes are 404', async (t) => {
    const { url } = await start(t, { liveCalls: undefined });
    assert.equal((await api(url, '/api/v1/live-calls')).status, 404);
    assert.equal((await api(url, '/api/v1/live-calls/events')).status, 404);
  });
});

test('toolbus up (embedded): /api/v1/system and /api/v1/services show the example joke service and its tools', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-console-up-'));
  const { io, errors: stderrText } = homeIo(home);
  const system = await startSystem({ examples: true, token: ADMIN, agentUnavailableMessage: 'no model' }, io);
  t.after(async () => {
    await system.close();
    await rm(home, { recursive: true, force: true });
  });
  const url = await system.gateway.listen({ host: '127.0.0.1', port: 0 });
  const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };

  const info = await body(await api(url, '/api/v1/system'));
  assert.equal(info['version'], pkg.version, stderrText());
  assert.deepEqual(info['bus'], { kind: 'memory', description: 'in-process (memory)', connected: true });
  assert.deepEqual(info['store'], { description: 'SQLite at config.db' }, 'shown relative to where it runs');
  assert.deepEqual(info['counts'], { tools: 2, services: 1, problems: 0, callsInFlight: 0 });
  assert.equal((info['ready'] as { status: string }).status, 'ready');

  const { services } = (await body(await api(url, '/api/v1/services'))) as { services: unknown[] };
  assert.deepEqual(services, [
    {
      id: 'joke-service',
      requestQueue: 'non-persistent://tg/request/joke',
      responseQueue: 'non-persistent://tg/response/joke',
      configParams: [{ name: 'style', required: false }],
      delivery: 'request-response',
      source: 'config',
      instances: [],
      tools: ['tell-dad-joke', 'tell-joke'],
    },
  ]);

  const tools = (await body(await api(url, '/api/v1/tools?detail=1')))['tools'] as Record<string, unknown>[];
  const joke = tools.find((x) => x['name'] === 'tell-joke')!;
  assert.deepEqual([joke['source'], joke['key'], joke['problems']], ['config', 'tool/tell-joke', []]);

  // A call through the gateway shows in the live calls, fed by the registry's tool set.
  const called = await invoke(url, 'tell-joke', { topic: 'cats' });
  assert.equal(called.status, 200);
  const { calls } = (await body(await api(url, '/api/v1/live-calls'))) as {
    calls: Record<string, unknown>[];
  };
  assert.deepEqual(
    calls.map((c) => [c['tool'], c['status']]),
    [['tell-joke', 'ok']],
  );

  // The console's page: served when `npm run build` has built it, else the 503 saying so.
  const page = await fetch(`${url}/`);
  if (page.status === 503) assert.match(await page.text(), /npm run build/);
  else assert.equal(page.status, 200);
});
