import { describe, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBus } from '../bus/index.js';
import type { MessageBus } from '../bus/index.js';
import { TOOL_DESCRIPTORS_TOPIC } from '../services/index.js';
import { AnnouncementTracker } from './announcement-tracker.js';

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
async function setup(t: { after: (fn: () => unknown) => void }, bus: MessageBus = new MemoryBus()) {
  mock.timers.enable({ apis: ['setTimeout'] });
  let clock = 5_000;
  const controller = new AbortController();
  let changes = 0;
  const tracker = new AnnouncementTracker(bus, {
    now: () => clock,
    signal: controller.signal,
    onChange: () => void changes++,
  });
  t.after(async () => {
    mock.timers.reset();
    controller.abort();
    await tracker.stop();
    await bus.close();
  });
  await tracker.start();
  return {
    tracker,
    controller,
    changes: () => changes,
    publish: async (body: string) => (await bus.publish(TOOL_DESCRIPTORS_TOPIC, body), await flush()),
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
