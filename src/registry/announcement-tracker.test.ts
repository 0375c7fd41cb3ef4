import { describe, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBus } from '../bus/index.js';
import type { MessageBus } from '../bus/index.js';
import { TOOL_DESCRIPTORS_TOPIC } from '../services/index.js';
import { AnnouncementTracker } from './announcement-tracker.js';
import { DEFAULT_ANNOUNCEMENT_LIMITS, type AnnouncementLimitsOptions } from './tool-registry-options.js';

/** Lets queued bus deliveries (microtasks) run. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

const announce = (instance: string, ttlMs: number, tools: string[], id = 'calc') =>
  JSON.stringify({
    kind: 'announce',
    instance,
    'ttl-ms': ttlMs,
    service: { id, 'request-queue': `request:tg:${id}`, 'response-queue': `response:tg:${id}` },
    tools: tools.map((name) => ({ name, description: name, arguments: [] })),
  });
const goodbye = (instance: string) => JSON.stringify({ kind: 'goodbye', instance, 'service-id': 'calc' });

/** A tracker on a memory bus with a clock the test moves (and setTimeout mocked to match). */
async function setup(
  t: { after: (fn: () => unknown) => void },
  bus: MessageBus = new MemoryBus(),
  limits: AnnouncementLimitsOptions = {},
) {
  mock.timers.enable({ apis: ['setTimeout'] });
  let clock = 5_000;
  const controller = new AbortController();
  let changes = 0;
  const tracker = new AnnouncementTracker(bus, {
    now: () => clock,
    signal: controller.signal,
    onChange: () => void changes++,
    limits: { ...DEFAULT_ANNOUNCEMENT_LIMITS, ...limits },
  });
  t.after(async () => {
    mock.timers.reset();
    controller.abort();
    await tracker.stop();
    await bus.close();
  });
  await tracker.start();
  return {
    bus,
    tracker,
    controller,
    changes: () => changes,
    publish: async (body: string | Uint8Array) => (
      await bus.publish(TOOL_DESCRIPTORS_TOPIC, body),
      await flush()
    ),
    advance: (ms: number) => ((clock += ms), mock.timers.tick(ms)),
    tools: (id = 'calc') => [...(tracker.services().get(id)?.tools.keys() ?? [])],
  };
}

describe('AnnouncementTracker', () => {
  test('an instance lasts for its time-to-live; a heartbeat renews it without a change', async (t) => {
    const f = await setup(t);
    await f.publish(announce('calc-1', 3_000, ['add']));
    assert.deepEqual(f.tools(), ['add']);
    assert.equal(f.changes(), 1);

    f.advance(2_000);
    await f.publish(announce('calc-1', 3_000, ['add'])); // the same announcement: a heartbeat
    assert.equal(f.changes(), 1, 'a heartbeat that repeats itself is not a change');
    f.advance(2_999);
    assert.deepEqual(f.tools(), ['add'], 'renewed until 3 s after the heartbeat');
    f.advance(1);
    assert.deepEqual(f.tools(), []);
    assert.equal(f.changes(), 2);
  });

  test('one timer follows the earliest expiry as instances come and go', async (t) => {
    const f = await setup(t);
    await f.publish(announce('short', 1_000, ['add']));
    await f.publish(announce('long', 10_000, ['add']));
    f.advance(1_000);
    assert.deepEqual(f.tools(), ['add'], 'the long-lived instance still offers it');
    assert.equal(f.changes(), 3, 'two announcements and one expiry');
    f.advance(9_000);
    assert.deepEqual(f.tools(), []);
    assert.equal(f.changes(), 4);
  });

  test('goodbye removes an instance at once; a goodbye from an unknown instance changes nothing', async (t) => {
    const f = await setup(t);
    await f.publish(announce('calc-1', 60_000, ['add']));
    await f.publish(goodbye('nobody'));
    assert.equal(f.changes(), 1);
    await f.publish(goodbye('calc-1'));
    assert.deepEqual(f.tools(), []);
    assert.equal(f.changes(), 2);
  });

  test("a service's tools are the union over its instances; its descriptor is the latest announced", async (t) => {
    const f = await setup(t);
    await f.publish(announce('calc-1', 60_000, ['add']));
    await f.publish(announce('calc-2', 60_000, ['add', 'mul']));
    assert.deepEqual(f.tools().sort(), ['add', 'mul']);
    await f.publish(goodbye('calc-2'));
    assert.deepEqual(f.tools(), ['add']);
  });

  test('a malformed announcement is ignored and reported once as a warning', async (t) => {
    const f = await setup(t);
    await f.publish('{not json');
    await f.publish('{not json');
    assert.equal(f.changes(), 0);
    const problems = f.tracker.problems();
    assert.equal(problems.length, 1);
    assert.equal(problems[0]!.key, 'announced');
    assert.equal(problems[0]!.severity, 'warning');
    assert.match(problems[0]!.message, /ignored a malformed announcement: announcement: body is not JSON/);
  });

  test('after the signal aborts no expiry fires; stop forgets every instance', async (t) => {
    const f = await setup(t);
    await f.publish(announce('calc-1', 1_000, ['add']));
    f.controller.abort();
    f.advance(5_000);
    assert.deepEqual(f.tools(), ['add']);
    assert.equal(f.changes(), 1);
    await f.tracker.stop();
    assert.deepEqual([...f.tracker.services()], []);
  });

  test('a failed announce request is reported, not thrown', async (t) => {
    const bus = new MemoryBus();
    const f = await setup(t, {
      publish: () => Promise.reject(new Error('bus down')),
      subscribe: (topic, handler, options) => bus.subscribe(topic, handler, options),
      close: () => bus.close(),
    });
    await f.tracker.requestAnnouncements();
    assert.deepEqual(f.tracker.problems(), [
      { key: 'announced', message: 'could not ask services to announce: bus down', severity: 'warning' },
    ]);
  });
});

describe('AnnouncementTracker caps', () => {
  /** The problem listed under `key`, if any. */
  const problem = (tracker: AnnouncementTracker, key: string) =>
    tracker.problems().find((p) => p.key === key);

  test('an instance over maxInstancesPerService is refused, counted and reported once; kept ones still renew', async (t) => {
    const f = await setup(t, undefined, { maxInstancesPerService: 2 });
    await f.publish(announce('calc-1', 3_000, ['add']));
    await f.publish(announce('calc-2', 3_000, ['add']));
    await f.publish(announce('calc-3', 3_000, ['add', 'mul']));
    await f.publish(announce('calc-4', 3_000, ['add']));
    assert.deepEqual(f.tracker.instanceCounts(), new Map([['calc', 2]]));
    assert.deepEqual(f.tools(), ['add'], 'the refused instance added nothing');
    const refused = f.tracker.problems().filter((p) => p.key === 'announced/calc');
    assert.equal(refused.length, 1, 'one problem per service');
    assert.equal(refused[0]!.severity, 'warning');
    assert.equal(refused[0]!.code, 'too-large');
    assert.match(refused[0]!.message, /refused 2 announcements: .*2 live instances.*maxInstancesPerService/);

    f.advance(2_000);
    await f.publish(announce('calc-1', 3_000, ['add'])); // a heartbeat of a kept instance
    f.advance(1_000);
    assert.deepEqual(f.tracker.instanceCounts(), new Map([['calc', 1]]), 'calc-2 lapsed, calc-1 renewed');
    await f.publish(announce('calc-3', 3_000, ['add', 'mul']));
    assert.deepEqual(f.tools().sort(), ['add', 'mul'], 'there is room again');
  });

  test('a service over maxServices, and an announcement over maxToolsPerAnnouncement, are refused', async (t) => {
    const f = await setup(t, undefined, { maxServices: 2, maxToolsPerAnnouncement: 2 });
    await f.publish(announce('a-1', 60_000, ['a'], 'a'));
    await f.publish(announce('b-1', 60_000, ['b'], 'b'));
    await f.publish(announce('c-1', 60_000, ['c'], 'c'));
    await f.publish(announce('a-2', 60_000, ['x', 'y', 'z'], 'a'));
    assert.deepEqual([...f.tracker.services().keys()].sort(), ['a', 'b']);
    assert.equal(f.tracker.instanceCounts().get('a'), 1);
    assert.match(problem(f.tracker, 'announced/c')!.message, /2 services are announced already.*maxServices/);
    assert.match(
      problem(f.tracker, 'announced/a')!.message,
      /it carried 3 tools, more than the 2 .*maxToolsPerAnnouncement/,
    );
    assert.equal(f.changes(), 2, 'nothing refused was a change');
  });

  test('maxTools counts distinct tools over all services, and a change that drops tools makes room', async (t) => {
    const f = await setup(t, undefined, { maxTools: 3 });
    await f.publish(announce('a-1', 60_000, ['x', 'y'], 'a'));
    await f.publish(announce('a-2', 60_000, ['x', 'y'], 'a')); // a replica: no new tools
    await f.publish(announce('b-1', 60_000, ['p', 'q'], 'b'));
    assert.deepEqual([...f.tracker.services().keys()], ['a']);
    assert.match(problem(f.tracker, 'announced/b')!.message, /maxTools/);
    await f.publish(announce('a-1', 60_000, ['x'], 'a'));
    await f.publish(announce('a-2', 60_000, ['x'], 'a'));
    await f.publish(announce('b-1', 60_000, ['p', 'q'], 'b'));
    assert.deepEqual(f.tools('b').sort(), ['p', 'q']);
    assert.deepEqual(f.tools('a'), ['x']);
  });

  test('a body over maxBytes is dropped unread; the announcements kept are capped by maxTotalBytes', async (t) => {
    const body = announce('calc-1', 60_000, ['add']);
    const size = Buffer.byteLength(body);
    const f = await setup(t, undefined, { maxBytes: size, maxTotalBytes: 2 * size + 10 });
    await f.publish(`${body} `); // too long by its length alone
    await f.publish(new TextEncoder().encode(`${body}  `)); // bytes
    // Fewer characters than maxBytes, more bytes: counted.
    await f.publish(`{"kind":"announce","pad":"${'é'.repeat(Math.ceil(size / 2))}"}`);
    assert.deepEqual(f.tools(), []);
    const oversized = f.tracker.problems().filter((p) => p.key === 'announced');
    assert.equal(oversized.length, 1);
    assert.equal(oversized[0]!.code, 'too-large');
    assert.match(oversized[0]!.message, new RegExp(`ignored 3 announcements larger than ${size} bytes`));

    await f.publish(body);
    await f.publish(announce('calc-2', 60_000, ['add']));
    await f.publish(announce('calc-3', 60_000, ['add']));
    assert.equal(f.tracker.instanceCounts().get('calc'), 2);
    assert.match(problem(f.tracker, 'announced/calc')!.message, /maxTotalBytes/);
    await f.publish(goodbye('calc-1'));
    await f.publish(announce('calc-3', 60_000, ['add']));
    assert.equal(f.tracker.instanceCounts().get('calc'), 2, 'a goodbye gives its bytes back');
  });

  test('a ttl-ms over maxTtlMs is clamped and reported; non-finite and negative ones are refused', async (t) => {
    const f = await setup(t, undefined, { maxTtlMs: 10_000 });
    await f.publish(announce('calc-1', 1e308, ['add']));
    assert.deepEqual(f.tools(), ['add']);
    const clamped = problem(f.tracker, 'announced/calc')!;
    assert.equal(clamped.severity, 'warning');
    assert.equal(clamped.code, undefined, 'kept, not refused');
    assert.match(
      clamped.message,
      /'ttl-ms' \(1e\+308\) is over the cap of 10000 ms \(announcementLimits\.maxTtlMs\)/,
    );
    f.advance(9_999);
    assert.deepEqual(f.tools(), ['add']);
    f.advance(1);
    assert.deepEqual(f.tools(), [], 'it lapsed after maxTtlMs without a heartbeat');

    await f.publish(announce('calc-2', 1, ['add']).replace('"ttl-ms":1', '"ttl-ms":1e400'));
    await f.publish(announce('calc-3', -5, ['add']));
    await f.publish(announce('calc-4', Number.NaN, ['add']));
    assert.deepEqual(f.tools(), []);
    const malformed = f.tracker.problems().filter((p) => p.key === 'announced');
    assert.equal(malformed.length, 3);
    for (const p of malformed) assert.match(p.message, /'ttl-ms' must be a finite positive number/);
  });

  test('what is refused of ever more services is listed for the first 100 and counted for the rest', async (t) => {
    const f = await setup(t, undefined, { maxServices: 1 });
    await f.publish(announce('keep-1', 60_000, ['keep'], 'keep'));
    for (let i = 0; i < 300; i++) {
      await f.bus.publish(TOOL_DESCRIPTORS_TOPIC, announce(`junk-${i}-1`, 60_000, [`j${i}`], `junk-${i}`));
    }
    await flush();
    assert.deepEqual([...f.tracker.services().keys()], ['keep']);
    const problems = f.tracker.problems();
    assert.equal(problems.filter((p) => p.key.startsWith('announced/junk-')).length, 100);
    const summary = problems.filter((p) => p.key === 'announced');
    assert.equal(summary.length, 1);
    assert.match(summary[0]!.message, /by reason: 200 services/);
  });

  test('instances expire in order of their time-to-live as heartbeats renew some of them', async (t) => {
    const f = await setup(t);
    for (let i = 0; i < 50; i++) await f.publish(announce(`calc-${i}`, 1_000 + i * 100, [`t${i}`]));
    assert.equal(f.tools().length, 50);
    f.advance(1_000); // calc-0 lapses
    for (let i = 0; i < 50; i += 2) await f.publish(announce(`calc-${i}`, 1_000 + i * 100, [`t${i}`]));
    f.advance(2_450); // the odd ones below ttl 3 450 lapse; the even ones were renewed at 1 000
    const left = new Set(f.tools());
    for (let i = 0; i < 50; i++) {
      const expiresAt = i % 2 === 0 ? 2_000 + i * 100 : 1_000 + i * 100;
      assert.equal(left.has(`t${i}`), expiresAt > 3_450, `t${i} (expires at ${expiresAt})`);
    }
    f.advance(10_000);
    assert.deepEqual(f.tools(), []);
    assert.deepEqual(f.tracker.instanceCounts(), new Map());
  });

  test('an instance id that announces another service moves there', async (t) => {
    const f = await setup(t);
    await f.publish(announce('x-1', 60_000, ['add'], 'calc'));
    await f.publish(announce('x-1', 60_000, ['say'], 'echo'));
    assert.deepEqual([...f.tracker.services().keys()], ['echo']);
    assert.deepEqual(f.tools('echo'), ['say']);
  });
});
