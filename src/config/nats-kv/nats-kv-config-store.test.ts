import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KV } from '@nats-io/kv';
import { ToolbusError } from '../../errors/index.js';
import { NatsKvConfigStore } from './nats-kv-config-store.js';

const invalidMaxWatchBuffer = (error: unknown) =>
  error instanceof ToolbusError &&
  error.code === 'usage' &&
  error.message.includes("'maxWatchBuffer'") &&
  /positive integer/.test(error.message);

const bad = [0, -1, Number.NaN, 2.5, '100' as unknown as number];

test('NatsKvConfigStore refuses a maxWatchBuffer that would fail every watch or remove its limit', async () => {
  // Never used: the option is checked before the bucket is touched.
  const kv = { status: () => Promise.reject(new Error('unused')) } as unknown as KV;
  for (const maxWatchBuffer of bad) {
    assert.throws(
      () => new NatsKvConfigStore(kv, { maxWatchBuffer }),
      invalidMaxWatchBuffer,
      String(maxWatchBuffer),
    );
  }
  // Checked before connecting (nothing listens on port 1): usage, not unavailable.
  await assert.rejects(
    NatsKvConfigStore.connect({ servers: 'nats://127.0.0.1:1', maxWatchBuffer: 0 }),
    invalidMaxWatchBuffer,
  );
  const store = new NatsKvConfigStore(kv, { maxWatchBuffer: 1 });
  await store.close();
});
