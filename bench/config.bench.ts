/**
 * @module Config store and registry benchmarks: SQLite put/get (fsync per commit vs not) against the
 * in-memory store as the baseline, and how long a registry takes to apply a one-item change among
 * many tools (the reused-tool path) against a full cold rebuild.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryBus } from '../src/bus/index.js';
import { MemoryConfigStore } from '../src/config/index.js';
import type { ConfigStore } from '../src/config/index.js';
import { SqliteConfigStore } from '../src/config/sqlite/index.js';
import { ToolRegistry } from '../src/registry/index.js';
import { measure, type BenchTable } from './harness.js';

const value = { type: 'tool-service', name: 'x', description: 'y', service: 'joke-service', style: 'pun' };

export default async function (): Promise<BenchTable[]> {
  const dir = mkdtempSync(join(tmpdir(), 'toolbus-bench-config-'));
  try {
    const stores: [string, ConfigStore][] = [
      ['MemoryConfigStore', new MemoryConfigStore()],
      [
        'SqliteConfigStore synchronous=normal',
        new SqliteConfigStore({ path: join(dir, 'n.db'), synchronous: 'normal' }),
      ],
      ['SqliteConfigStore synchronous=full (default)', new SqliteConfigStore({ path: join(dir, 'f.db') })],
    ];
    const putRows = [];
    const getRows = [];
    for (const [name, store] of stores) {
      let i = 0;
      putRows.push(
        await measure(`put: ${name}`, () => store.put('tool', `k${i++ % 500}`, value), {
          iterations: 3000,
          maxMs: 3000,
          warmup: 100,
        }),
      );
      getRows.push(
        await measure(`get: ${name}`, () => store.get('tool', `k${i++ % 500}`), {
          iterations: 20_000,
          maxMs: 2000,
        }),
      );
      await store.close();
    }

    // Registry: one changed item among N tools (others reused) vs a cold start over the same N.
    const store = new MemoryConfigStore();
    const bus = new MemoryBus();
    await store.put('tool-service', 'joke-service', {
      id: 'joke-service',
      'request-queue': 'request:tg:joke',
      'response-queue': 'response:tg:joke',
      'config-params': [{ name: 'style', required: true }],
    });
    const N = 200;
    for (let k = 0; k < N; k++) await store.put('tool', `t${k}`, { ...value, name: `t${k}` });
    const registry = new ToolRegistry({ store, bus, announcements: false });
    await registry.start();
    let n = 0;
    const registryRows = [
      await measure(
        `cold start, ${N} tools`,
        async () => {
          const r = new ToolRegistry({ store, bus, announcements: false });
          await r.start();
          await r.close();
        },
        { iterations: 100, maxMs: 4000, warmup: 5 },
      ),
      await measure(
        `apply one changed item among ${N} tools`,
        async () => {
          await store.put('tool', 't0', { ...value, name: 't0', style: `s${n++}` });
          await registry.refresh();
        },
        { iterations: 500, maxMs: 4000, warmup: 10 },
      ),
    ];
    await registry.close();
    await bus.close();
    return [
      { title: 'ConfigStore.put', baseline: 'put: MemoryConfigStore', rows: putRows },
      { title: 'ConfigStore.get', baseline: 'get: MemoryConfigStore', rows: getRows },
      {
        title: 'ToolRegistry reload',
        baseline: `cold start, ${N} tools`,
        rows: registryRows,
        notes: [
          'A change rebuilds only the tools whose item or looked-up items changed; the rest are reused.',
        ],
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
