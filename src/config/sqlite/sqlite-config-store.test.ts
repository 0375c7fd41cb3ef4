import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ToolbusError } from '../../errors/index.js';
import { SqliteConfigStore } from './sqlite-config-store.js';

test('SqliteConfigStore refuses a bad busyTimeoutMs as usage, not as a file that failed to open', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'toolbus-sqlite-options-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'config.db');
  for (const busyTimeoutMs of [-1, Number.NaN, 1.5, 2 ** 31, '100' as unknown as number]) {
    assert.throws(
      () => new SqliteConfigStore({ path, busyTimeoutMs }),
      (error: unknown) =>
        error instanceof ToolbusError && error.code === 'usage' && error.message.includes("'busyTimeoutMs'"),
      String(busyTimeoutMs),
    );
  }
  assert.equal(existsSync(path), false, 'nothing is created for a refused option');
  // 0 is valid: fail at once on another writer's lock.
  const store = new SqliteConfigStore({ path, busyTimeoutMs: 0 });
  await store.put('tool', 'a', { x: 1 });
  await store.close();
});
