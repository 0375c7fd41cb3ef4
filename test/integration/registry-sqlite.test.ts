import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryBus } from '../../src/bus/index.js';
import { SqliteConfigStore } from '../../src/config/sqlite/index.js';
import { ToolRegistry } from '../../src/registry/index.js';
import { DynamicToolService } from '../../src/services/index.js';

const root = mkdtempSync(join(tmpdir(), 'toolbus-registry-sqlite-'));
after(() => rmSync(root, { recursive: true, force: true }));
const repo = new URL('../..', import.meta.url).pathname;

/** `toolbus config <args>` in a child process, writing to `path`. */
function cli(path: string, args: string[], stdin = ''): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'config', ...args, '--store', path],
      {
        cwd: repo,
        env: { ...process.env, TOOLBUS_NATS: '' },
      },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stderr }));
    child.stdin.end(stdin);
  });
}

/** Waits (bounded) until `check` holds, re-checking on every registry change. */
async function until(registry: ToolRegistry, check: () => boolean, what: string): Promise<void> {
  if (check()) return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`timed out waiting for ${what}`));
    }, 10_000);
    const off = registry.onChange(() => {
      if (check()) {
        clearTimeout(timer);
        off();
        resolve();
      }
    });
  });
}

test('a running registry follows `toolbus config` writes made by another process', async (t) => {
  const path = join(root, 'config.db');
  const store = new SqliteConfigStore({ path, pollMs: 25 });
  const bus = new MemoryBus();
  const service = new DynamicToolService({
    bus,
    id: 'joke-service',
    topic: 'joke',
    invoke: (_u, config, args) => `${String(config.style)} about ${String(args.topic)}`,
  });
  await service.start();
  const registry = new ToolRegistry({ store, bus, announcements: false });
  t.after(async () => {
    await registry.close();
    await service.stop();
    await store.close();
    await bus.close();
  });
  await registry.start();
  const names = () =>
    registry.tools
      .list()
      .map((x) => x.name)
      .sort();
  const tool = (name: string, style = 'pun') =>
    JSON.stringify({
      type: 'tool-service',
      name,
      description: name,
      service: 'joke-service',
      style,
      arguments: [{ name: 'topic', type: 'string', description: 'about' }],
    });
  const service1 = JSON.stringify({
    id: 'joke-service',
    'request-queue': 'non-persistent://tg/request/joke',
    'response-queue': 'non-persistent://tg/response/joke',
    'config-params': [{ name: 'style', required: true }],
  });

  // The tool first, its service later (TrustGraph would reject the tool-only change).
  assert.equal((await cli(path, ['put', 'tool/tell-joke'], tool('tell-joke'))).code, 0);
  assert.equal(
    (
      await cli(path, [
        'put',
        '--type',
        'tool',
        '--key',
        'broken',
        '--value',
        '{"type":"tool-service"}',
        '--force', // refused without it: the registry would skip it, which is what this test needs
      ])
    ).code,
    0,
  );
  await until(
    registry,
    () => registry.problems().some((p) => p.key === 'tool/tell-joke'),
    'the problem report',
  );
  assert.deepEqual(names(), []);
  assert.equal((await cli(path, ['put', 'tool-service/joke-service'], service1)).code, 0);
  await until(registry, () => names().includes('tell-joke'), 'tell-joke to go live');
  assert.deepEqual(
    registry.problems().map((p) => p.key),
    ['tool/broken'],
    'the bad item is reported, the good one is live',
  );

  // Only the tool-service item changes: the tools stay (TrustGraph would wipe them).
  assert.equal((await cli(path, ['put', 'tool/tell-pun'], tool('tell-pun'))).code, 0);
  await until(registry, () => names().length === 2, 'tell-pun');
  const before = registry.tools.get('tell-pun');
  const relaxed = service1.replace('"required":true', '"required":false');
  assert.equal((await cli(path, ['put', 'tool-service/joke-service'], relaxed)).code, 0);
  // The tools are rebuilt against the new service (new objects), and none is lost.
  await until(
    registry,
    () => registry.tools.get('tell-pun') !== before,
    'the rebuild after the service change',
  );
  assert.deepEqual(names(), ['tell-joke', 'tell-pun']);
  assert.equal((await registry.tools.call('tell-pun', { topic: 'owls' })).content, 'pun about owls');

  // A delete from the CLI withdraws the tool.
  assert.equal((await cli(path, ['delete', 'tool/tell-joke'])).code, 0);
  await until(registry, () => !names().includes('tell-joke'), 'tell-joke to go');
  assert.deepEqual(names(), ['tell-pun']);
});
