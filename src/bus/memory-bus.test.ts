import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBus } from './memory-bus.js';
import type { BusMessage } from './message-bus.js';
import { ToolbusError } from '../errors/index.js';

const text = (m: BusMessage): string => new TextDecoder().decode(m.body);
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('MemoryBus', () => {
  test('subscribers sharing a group compete: each message reaches exactly one, spread round-robin', async () => {
    const bus = new MemoryBus();
    const got: string[][] = [[], [], []];
    for (const i of [0, 1, 2])
      await bus.subscribe('request:tg:joke', (m) => void got[i]!.push(text(m)), { group: 'g' });
    for (let i = 0; i < 30; i++) await bus.publish('request:tg:joke', String(i));
    await tick();
    const all = got
      .flat()
      .map(Number)
      .sort((a, b) => a - b);
    assert.deepEqual(
      all,
      Array.from({ length: 30 }, (_, i) => i),
    );
    for (const list of got) assert.equal(list.length, 10);
    await bus.close();
  });

  test('subscribers without a group each get every message, alongside one member per group', async () => {
    const bus = new MemoryBus();
    const a: string[] = [];
    const b: string[] = [];
    const g: string[] = [];
    await bus.subscribe('t', (m) => void a.push(text(m)));
    await bus.subscribe('t', (m) => void b.push(text(m)));
    await bus.subscribe('t', (m) => void g.push(text(m)), { group: 'x' });
    await bus.subscribe('t', (m) => void g.push(text(m)), { group: 'x' });
    await bus.publish('t', 'one', { id: '1' });
    await bus.publish('t', 'two');
    await tick();
    assert.deepEqual(a, ['one', 'two']);
    assert.deepEqual(b, ['one', 'two']);
    assert.deepEqual(g.sort(), ['one', 'two']);
    await bus.close();
  });

  test('the Pulsar, persistent and logical forms of a topic name the same topic', async () => {
    const bus = new MemoryBus();
    const got: BusMessage[] = [];
    await bus.subscribe('request:tg:joke', (m) => void got.push(m));
    await bus.publish('non-persistent://tg/request/joke', 'a', { id: 'x' });
    await bus.publish('persistent://tg/request/joke', 'b');
    await tick();
    assert.deepEqual(got.map(text), ['a', 'b']);
    assert.equal(got[0]!.topic, 'non-persistent://tg/request/joke');
    assert.deepEqual(got[0]!.properties, { id: 'x' });
    await bus.close();
  });

  test('delivery is asynchronous: never inside publish', async () => {
    const bus = new MemoryBus();
    let delivered = false;
    await bus.subscribe('t', () => {
      delivered = true;
    });
    const p = bus.publish('t', 'x');
    assert.equal(delivered, false);
    await p;
    await tick();
    assert.equal(delivered, true);
    await bus.close();
  });

  test('a throwing or rejecting handler is reported through hooks and delivery goes on', async () => {
    const errors: unknown[] = [];
    const bus = new MemoryBus({ hooks: { onHandlerError: ({ error }) => errors.push(error) } });
    const got: string[] = [];
    await bus.subscribe('t', (m) => {
      if (text(m) === 'boom') throw new Error('sync boom');
      got.push(text(m));
    });
    await bus.subscribe('t', async (m) => {
      if (text(m) === 'boom') throw new Error('async boom');
    });
    await bus.publish('t', 'boom');
    await bus.publish('t', 'ok');
    await tick();
    assert.deepEqual(got, ['ok']);
    assert.deepEqual(errors.map((e) => (e as Error).message).sort(), ['async boom', 'sync boom']);
    await bus.close();
  });

  test('onUnavailable fires with code unavailable when nobody is subscribed, and not otherwise', async () => {
    const bus = new MemoryBus();
    const calls: ToolbusError[] = [];
    await bus.publish('request:tg:nobody', 'x', {}, { onUnavailable: (e) => calls.push(e) });
    await tick();
    assert.equal(calls.length, 1);
    assert.ok(calls[0] instanceof ToolbusError);
    assert.equal(calls[0].code, 'unavailable');
    assert.match(calls[0].message, /request:tg:nobody/);
    await bus.subscribe('request:tg:somebody', () => undefined, { group: 'g' });
    await bus.publish('request:tg:somebody', 'x', {}, { onUnavailable: (e) => calls.push(e) });
    await tick();
    assert.equal(calls.length, 1);
    await bus.close();
  });

  test('unsubscribe stops delivery; a group member that left is skipped', async () => {
    const bus = new MemoryBus();
    const a: string[] = [];
    const b: string[] = [];
    const subA = await bus.subscribe('t', (m) => void a.push(text(m)), { group: 'g' });
    await bus.subscribe('t', (m) => void b.push(text(m)), { group: 'g' });
    await subA.unsubscribe();
    await subA.unsubscribe();
    for (let i = 0; i < 4; i++) await bus.publish('t', String(i));
    await tick();
    assert.deepEqual(a, []);
    assert.deepEqual(b, ['0', '1', '2', '3']);
    await bus.close();
  });

  test('a message whose only subscriber leaves before delivery reports onUnavailable, never vanishes', async () => {
    const bus = new MemoryBus();
    const got: string[] = [];
    const sub = await bus.subscribe('request:tg:gone', (m) => void got.push(text(m)), { group: 'g' });
    const reports: ToolbusError[] = [];
    // Routed to the one member, which leaves before the delivery's turn.
    void bus.publish('request:tg:gone', 'call', { id: '1' }, { onUnavailable: (e) => reports.push(e) });
    void sub.unsubscribe();
    await tick();
    assert.equal(got.length, 0);
    assert.equal(reports.length, 1);
    assert.equal(reports[0]!.code, 'unavailable');
    assert.match(reports[0]!.message, /no subscriber on topic 'request:tg:gone'/);
    // A message that did reach someone is not reported.
    await bus.subscribe('request:tg:gone', (m) => void got.push(text(m)), { group: 'g' });
    await bus.publish('request:tg:gone', 'again', {}, { onUnavailable: (e) => reports.push(e) });
    await tick();
    assert.deepEqual(got, ['again']);
    assert.equal(reports.length, 1);
    await bus.close();
  });

  test('after close, publish and subscribe reject with code closed; close is idempotent', async () => {
    const bus = new MemoryBus();
    await bus.close();
    await bus.close();
    await assert.rejects(
      bus.publish('t', 'x'),
      (e: unknown) => e instanceof ToolbusError && e.code === 'closed',
    );
    await assert.rejects(
      bus.subscribe('t', () => undefined),
      (e: unknown) => e instanceof ToolbusError && e.code === 'closed',
    );
    assert.equal(await bus.closed, undefined);
  });

  test('a malformed topic name rejects with invalid-config', async () => {
    const bus = new MemoryBus();
    await assert.rejects(
      bus.publish('bad topic!', 'x'),
      (e: unknown) => (e as ToolbusError).code === 'invalid-config',
    );
    await bus.close();
  });
});
