/**
 * The published shape: `npm run build` emits JS and `.d.ts` for every export, a consumer compiles against
 * the declarations with `skipLibCheck: false`, and the built root entry and CLI run on plain Node.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { packedManifest } from '../src/cli/package-manifest.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

interface PackageJson {
  exports: Record<string, string | { types: string; default: string }>;
  bin: Record<string, string>;
}

test('the build emits JS and .d.ts for every export, and a consumer type-checks against them', async (t) => {
  // A copy of the package as npm would install it: package.json, bin and a fresh dist/.
  const dir = await mkdtemp(join(tmpdir(), 'toolbus-build-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const pkgDir = join(dir, 'node_modules', 'toolbus');
  await mkdir(pkgDir, { recursive: true });
  await run(
    process.execPath,
    [TSC, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(pkgDir, 'dist')],
    {
      cwd: ROOT,
    },
  );
  // The rest of `npm run build`: the example service `toolbus up` starts, compiled beside dist/.
  await run(process.execPath, [join(ROOT, 'scripts/build-examples.mjs'), join(pkgDir, 'dist')], {
    cwd: ROOT,
  });
  // package.json as packed (exports at dist/, not the checkout's entry/ stubs) and what `files` ships.
  await writeFile(
    join(pkgDir, 'package.json'),
    packedManifest(await readFile(join(ROOT, 'package.json'), 'utf8')),
  );
  await cp(join(ROOT, 'bin'), join(pkgDir, 'bin'), { recursive: true });
  await cp(join(ROOT, 'examples'), join(pkgDir, 'examples'), { recursive: true });
  // The dependencies and peers resolve from the project's own node_modules (every package there: that
  // package.json declares them all is what pack-consumer.test.ts checks, with a real install).
  for (const name of await readdir(join(ROOT, 'node_modules'))) {
    if (name === 'toolbus' || name.startsWith('.')) continue;
    await symlink(join(ROOT, 'node_modules', name), join(dir, 'node_modules', name));
  }

  const pkg = JSON.parse(await readFile(join(pkgDir, 'package.json'), 'utf8')) as PackageJson;
  for (const [key, target] of Object.entries(pkg.exports)) {
    if (typeof target === 'string') {
      assert.ok(existsSync(join(pkgDir, target)), `export '${key}' points at a missing file ${target}`);
      continue;
    }
    assert.deepEqual(Object.keys(target), ['types', 'default'], `export '${key}': types must come first`);
    assert.ok(existsSync(join(pkgDir, target.types)), `export '${key}': missing ${target.types}`);
    assert.ok(existsSync(join(pkgDir, target.default)), `export '${key}': missing ${target.default}`);
  }

  await writeFile(
    join(dir, 'consumer.ts'),
    `import { FunctionTool, ToolSet, MemoryBus, DynamicToolService, ToolServiceClient, ToolRegistry, MemoryConfigStore,
  ToolUseAgent, HttpTool, type ToolResult } from 'toolbus';
import { ScriptedChatCompletionClient } from 'toolbus/testing';
import { createGateway } from 'toolbus/gateway';
import { encodeRequest, type ToolServiceResponse } from 'toolbus/wire';
import { SingleThreadedAgentRuntime, RoutedAgent } from 'toolbus/runtime';
import { NatsBus, NatsKvConfigStore } from 'toolbus/nats';
import { SqliteConfigStore } from 'toolbus/sqlite';
import { mcpServerTools, createMcpServer } from 'toolbus/mcp';
import { OpenAIChatCompletionClient, saptivaClient } from 'toolbus/openai';
import { LangChainToolAdapter, toLangChainTool } from 'toolbus/langchain';
import { z } from 'zod';

const tool = new FunctionTool(async ({ a }) => a * 2, {
  name: 'double', description: 'Doubles a number.', parameters: z.object({ a: z.number() }) });
const result: Promise<ToolResult> = new ToolSet([tool]).call('double', { a: 2 });
const response: ToolServiceResponse = { error: null, response: 'ok', end_of_stream: true };
void [result, response, MemoryBus, DynamicToolService, ToolServiceClient, ToolRegistry, MemoryConfigStore, ToolUseAgent,
  ScriptedChatCompletionClient, createGateway, encodeRequest, SingleThreadedAgentRuntime, RoutedAgent, HttpTool, NatsBus, NatsKvConfigStore, SqliteConfigStore, mcpServerTools,
  createMcpServer, OpenAIChatCompletionClient, saptivaClient, LangChainToolAdapter, toLangChainTool];
`,
  );
  await writeFile(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        skipLibCheck: false,
        noEmit: true,
        types: ['node'],
      },
      files: ['consumer.ts'],
    }),
  );
  await writeFile(join(dir, 'package.json'), '{"type":"module"}');
  try {
    await run(process.execPath, [TSC, '-p', join(dir, 'tsconfig.json')], { cwd: dir });
  } catch (error) {
    const { stdout, stderr } = error as { stdout: string; stderr: string };
    assert.fail(`the consumer does not type-check against dist/*.d.ts:\n${stdout}${stderr}`);
  }

  // The built root entry runs on plain Node (no tsx) and the built CLI answers --help.
  const { stdout } = await run(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      "const m = await import('toolbus'); console.log(typeof m.ToolSet, typeof m.FunctionTool)",
    ],
    { cwd: dir },
  );
  assert.equal(stdout.trim(), 'function function');
  const help = await run(process.execPath, [join(pkgDir, 'bin/toolbus.js'), '--help'], { cwd: dir });
  assert.match(help.stdout, /Usage: toolbus <command>/);

  // The main job from the installed package, examples included: the joke service answers over HTTP.
  const up = spawn(process.execPath, [join(pkgDir, 'bin/toolbus.js'), 'up', '--port', '0'], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: join(dir, 'home') },
  });
  t.after(() => {
    if (up.exitCode === null) up.kill('SIGKILL');
  });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`toolbus up is not ready:\n${out}`)), 60_000);
    const onData = (d: Buffer): void => {
      out += d.toString();
      if (out.includes('Press Ctrl-C to stop.')) {
        clearTimeout(timer);
        resolve();
      }
    };
    up.stdout.on('data', onData);
    up.stderr.on('data', onData);
    up.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`toolbus up exited with ${code}:\n${out}`));
    });
  });
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1];
  assert.ok(url, out);
  // The installed package made a token for its gateway, as a fresh checkout's `npm start` does.
  const token = (await readFile(join(dir, 'home', 'token'), 'utf8')).trim();
  const response = await fetch(`${url}/api/v1/tools/tell-joke/invoke`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{"topic":"cats"}',
  });
  const invoked = (await response.json()) as { content: string; isError: boolean };
  assert.equal(invoked.isError, false, invoked.content);
  assert.match(invoked.content, /cats|pun/i);
  up.kill('SIGTERM');
  const code = await new Promise<number | null>((resolve) => up.once('exit', resolve));
  assert.equal(code, 0, out);
});
