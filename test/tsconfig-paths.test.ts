/**
 * tsconfig.json maps `toolbus` and `toolbus/<entry>` to their sources, so a snippet saved in the
 * checkout type-checks and runs under tsx without a build. The map must follow package.json's exports.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ROOT } from './support/cli.js';

test("tsconfig.json's paths map every package.json export to its source, and nothing else", async () => {
  const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
    name: string;
    exports: Record<string, string | { default: string }>;
  };
  const tsconfig = JSON.parse(await readFile(join(ROOT, 'tsconfig.json'), 'utf8')) as {
    compilerOptions: { paths?: Record<string, string[]> };
  };
  const expected: Record<string, string[]> = {};
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    if (typeof target === 'string') continue; // ./package.json
    const built = /^\.\/entry\/(.+)\.js$/.exec(target.default);
    assert.ok(built, `export '${subpath}' points outside entry/: ${target.default}`);
    const source = `./src/${built[1]}.ts`;
    assert.ok(existsSync(join(ROOT, source)), `export '${subpath}': no source ${source}`);
    expected[pkg.name + subpath.slice(1)] = [source];
  }
  assert.deepEqual(tsconfig.compilerOptions.paths, expected);
});
