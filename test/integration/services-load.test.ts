/**
 * Load: 10 000 concurrent tool-service calls over a MemoryBus, two replicas, all completing, nothing left
 * pending. Bounded in count; the test timeout bounds the time.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBus } from '../../src/bus/index.js';
import { DynamicToolService, ToolServiceClient } from '../../src/services/index.js';

const CALLS = 10_000;
const queues = { requestQueue: 'request:tg:load', responseQueue: 'response:tg:load' };

test(
  '10 000 concurrent calls all complete, each handled once, with the pending tables empty afterwards',
  { timeout: 60_000 },
  async (t) => {
    const bus = new MemoryBus();
    const seen = new Uint8Array(CALLS);
    const replicas = [0, 1].map(
      () =>
        new DynamicToolService({
          bus,
          ...queues,
          concurrency: 256,
          maxQueued: CALLS,
          invoke: async (user, _config, args) => {
            const n = args['n'] as number;
            seen[n]!++;
            if (n % 7 === 0) await new Promise((r) => setImmediate(r));
            return { user, n };
          },
        }),
    );
    for (const r of replicas) await r.start();
    const client = new ToolServiceClient(bus, queues);
    t.after(async () => {
      await client.close();
      for (const r of replicas) await r.stop();
      await bus.close();
    });

    const calls = Array.from({ length: CALLS }, (_, n) => client.call(`user-${n % 10}`, {}, { n }));
    assert.equal(client.pendingCount, CALLS);
    const results = await Promise.all(calls);

    results.forEach((text, n) => assert.equal(text, `{"user":"user-${n % 10}","n":${n}}`));
    assert.ok(seen.every((count) => count === 1));
    assert.equal(client.pendingCount, 0);
    const stats = client.stats();
    assert.equal(stats.completed, CALLS);
    assert.deepEqual(stats.dropped, { late: 0, duplicate: 0, unknown: 0, malformed: 0 });
    for (const r of replicas) {
      const s = r.stats();
      assert.equal(s.inFlight, 0);
      assert.equal(s.queued, 0);
      assert.equal(s.rejected, 0);
    }
    assert.equal(replicas[0]!.stats().completed + replicas[1]!.stats().completed, CALLS);
  },
);
