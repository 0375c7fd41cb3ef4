import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryBus } from '../bus/index.js';
import { ToolServiceClient } from '../services/index.js';
import {
  importServiceFactory,
  serviceLoadErrorMessage,
  startServiceModule,
  type ServiceModuleEvent,
} from './service-module.js';

test('a TypeScript service module that plain Node cannot load gets the fix, not only "Unknown file extension"', () => {
  const error = Object.assign(new TypeError('Unknown file extension ".ts" for /home/me/echo-service.ts'), {
    code: 'ERR_UNKNOWN_FILE_EXTENSION',
  });
  const message = serviceLoadErrorMessage('echo-service.ts', error);
  assert.match(message, /^cannot load the service module 'echo-service.ts': Unknown file extension ".ts"/);
  assert.match(message, /compile the module to JavaScript/);
  assert.match(message, /NODE_OPTIONS='--import tsx' npx toolbus service echo-service\.ts/);
});

test("a load error is one line that names the module as the user wrote it, not the loader's absolute path", () => {
  const error = new Error(
    'Transform failed with 1 error:\n/home/me/echo.ts:2:0: ERROR: Unexpected end of file',
  );
  assert.equal(
    serviceLoadErrorMessage('./echo.ts', error, '/home/me/echo.ts'),
    "cannot load the service module './echo.ts': ./echo.ts:2:0: ERROR: Unexpected end of file",
  );
});

async function tempDir(t: { after(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'toolbus-service-module-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'package.json'), '{"type":"module"}');
  return dir;
}

test('a missing service module is named as given, without the file that imported it', async (t) => {
  const dir = await tempDir(t);
  await assert.rejects(importServiceFactory('./missing.ts', dir), {
    message: "cannot find the service module './missing.ts'",
  });
});

test('a module without a default export function says what to export', async (t) => {
  const dir = await tempDir(t);
  await writeFile(join(dir, 'nodefault.ts'), 'export const x = 1;\n');
  await assert.rejects(importServiceFactory('nodefault.ts', dir), /has no default export function/);
});

/** A service module answering `<answer>` after `ms` milliseconds (the call's argument). */
function slowService(topic: string, answer: string, helper = false): string {
  return `import { DynamicToolService } from 'toolbus';
${helper ? "import { suffix } from './helper.ts';" : "const suffix = '';"}
export default (bus) =>
  new DynamicToolService({
    bus,
    topic: '${topic}',
    async invoke(_user, _config, args) {
      await new Promise((r) => setTimeout(r, Number(args.ms ?? 0)));
      return '${answer}' + suffix;
    },
  });
`;
}

test('reload swaps in the new instance; a call in flight finishes on the old one, a broken module keeps it', async (t) => {
  const dir = await tempDir(t);
  await writeFile(join(dir, 'helper.ts'), "export const suffix = '!';\n");
  const file = join(dir, 'slow.ts');
  await writeFile(file, slowService('slow', 'v1', true));
  const bus = new MemoryBus();
  const client = new ToolServiceClient(bus, {
    requestQueue: 'non-persistent://tg/request/slow',
    responseQueue: 'non-persistent://tg/response/slow',
  });
  const events: ServiceModuleEvent[] = [];
  const running = await startServiceModule('./slow.ts', bus, { cwd: dir, onEvent: (e) => events.push(e) });
  t.after(async () => {
    await running.close();
    await client.close();
    await bus.close();
  });
  assert.deepEqual(running.ids(), ['slow']);

  const inFlight = client.call('u', {}, { ms: 300 });
  await new Promise((r) => setTimeout(r, 50));
  await writeFile(join(dir, 'helper.ts'), "export const suffix = '?';\n");
  await writeFile(file, slowService('slow', 'v2', true));
  assert.equal(await running.reload(), true);
  // The new module and its local helper, both re-read.
  assert.equal(await client.call('u', {}, { ms: 0 }), 'v2?');
  assert.equal(await inFlight, 'v1!');

  await writeFile(file, 'export default (;\n');
  assert.equal(await running.reload(), false);
  const failed = events.find((e) => e.type === 'reload-failed');
  assert.ok(failed && failed.type === 'reload-failed');
  assert.match(failed.message, /^cannot load the service module '\.\/slow\.ts': \.\/slow\.ts:1:\d+: /);
  assert.doesNotMatch(failed.message, /\n/);
  assert.equal(await client.call('u', {}, { ms: 0 }), 'v2?');
});
