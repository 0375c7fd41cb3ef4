import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBus } from '../bus/index.js';
import { decodeAnnouncement, startAnnouncer } from './announcements.js';

const service = { id: 'joke', 'request-queue': 'request:tg:joke', 'response-queue': 'response:tg:joke' };
const announce = (ttl: string): string =>
  `{"kind":"announce","instance":"joke-1","ttl-ms":${ttl},"service":${JSON.stringify(service)},"tools":[]}`;

test("an announcement whose 'ttl-ms' is not a finite positive number is rejected, so its tools cannot live forever", () => {
  // 1e400 parses to Infinity: registries would keep that instance's tools forever.
  for (const ttl of ['1e400', '-1e400', '0', '-5', '"15000"', 'null']) {
    assert.throws(() => decodeAnnouncement(announce(ttl)), {
      code: 'invalid-request',
      message: /'ttl-ms' must be a finite positive number/,
    });
  }
  const decoded = decodeAnnouncement(announce('15000'));
  assert.equal(decoded.kind === 'announce' && decoded.ttlMs, 15_000);
});

test('an announcer with an infinite ttlMs fails at start instead of announcing what every registry rejects', async (t) => {
  const bus = new MemoryBus();
  t.after(() => bus.close());
  await assert.rejects(startAnnouncer(bus, { service, ttlMs: Infinity, heartbeatMs: 1000 }), {
    code: 'invalid-config',
    message: /ttlMs/,
  });
});

test('an announcer answers a short announce-request only; a long body is not parsed for one', async (t) => {
  const bus = new MemoryBus();
  const announcer = await startAnnouncer(bus, { service, ttlMs: 600_000, heartbeatMs: 300_000 });
  t.after(async () => {
    await announcer.stop();
    await bus.close();
  });
  const kinds: string[] = [];
  await bus.subscribe('tool-descriptors', (m) => void kinds.push(decodeAnnouncement(m.body).kind));
  const flush = () => new Promise<void>((resolve) => setImmediate(resolve));
  await bus.publish('tool-descriptors', JSON.stringify({ kind: 'announce-request', pad: 'x'.repeat(5_000) }));
  await flush();
  assert.deepEqual(kinds, ['announce-request']);
  await bus.publish('tool-descriptors', JSON.stringify({ kind: 'announce-request', pad: 'x'.repeat(100) }));
  await flush();
  assert.deepEqual(kinds, ['announce-request', 'announce-request', 'announce']);
});
