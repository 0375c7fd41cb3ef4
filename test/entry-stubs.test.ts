/**
 * The checkout's entries (package.json exports → `entry/**`): they are up to date with the sources'
 * exports, a checkout with no build says so in one line when toolbus is imported, and with a build
 * every entry gives the built module's names.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { checkoutEntries } from '../src/cli/package-manifest.js';
import { ROOT } from './support/cli.js';
import { currentBuild } from './support/pack.js';

const run = promisify(execFile);

/** A copy of the checkout's package.json and entry/ (no dist/ unless `dist` is given), with its node_modules. */
async function checkoutCopy(t: { after(fn: () => Promise<void>): void }, dist?: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'toolbus-entry-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await cp(join(ROOT, 'package.json'), join(dir, 'package.json'));
  await cp(join(ROOT, 'entry'), join(dir, 'entry'), { recursive: true });
  await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  // A copy, not a link: the build's imports of the peers must resolve from this folder's node_modules.
  if (dist) await cp(dist, join(dir, 'dist'), { recursive: true });
  return dir;
}

/** Runs `node probe.mjs` in `dir` (plain Node: no tsx, no NODE_OPTIONS). */
async function probe(dir: string, code: string): Promise<{ code: number; stdout: string; stderr: string }> {
  await writeFile(join(dir, 'probe.mjs'), code);
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  try {
    const { stdout, stderr } = await run(process.execPath, ['probe.mjs'], { cwd: dir, env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

test('the entry stubs list the names their sources export (npm run entry-stubs -- --check)', async () => {
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'scripts/entry-stubs.ts'), '--check'],
    { cwd: ROOT },
  );
  assert.match(stdout, /up to date/);
});

test("importing toolbus from a checkout with no build prints one line saying to run 'npm run build'", async (t) => {
  const dir = await checkoutCopy(t);
  for (const [specifier, name] of [
    ['toolbus', 'ToolSet'],
    ['toolbus/nats', 'NatsBus'],
  ]) {
    const result = await probe(
      dir,
      `import { ${name} } from '${specifier}';\nconsole.log(typeof ${name});\n`,
    );
    assert.equal(result.code, 1, specifier);
    assert.equal(result.stdout, '');
    const lines = result.stderr.trimEnd().split('\n');
    assert.equal(lines.length, 1, `one line, got:\n${result.stderr}`);
    assert.match(
      lines[0]!,
      /^toolbus: this checkout has no build \(dist\/.+\.js is missing\): run 'npm run build'/,
    );
    assert.doesNotMatch(lines[0]!, new RegExp(dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), 'no machine path');
  }
});

test('with a build, every entry of the checkout gives exactly the built module', async (t) => {
  const dir = await checkoutCopy(t, await currentBuild());
  const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { exports: unknown };
  const checks = checkoutEntries(pkg.exports).map(({ subpath, path }) => {
    const built = pathToFileURL(join(dir, 'dist', `${path}.js`)).href;
    return (
      `{ const a = await import('toolbus${subpath.slice(1)}'); const b = await import('${built}');\n` +
      `  const ka = Object.keys(a).sort(), kb = Object.keys(b).sort();\n` +
      `  if (JSON.stringify(ka) !== JSON.stringify(kb)) throw new Error('${subpath}: ' + ka + ' vs ' + kb);\n` +
      `  for (const k of kb) if (a[k] !== b[k]) throw new Error('${subpath}: ' + k + ' is another object');\n` +
      `  console.log('${subpath}', kb.length); }\n`
    );
  });
  const result = await probe(dir, checks.join(''));
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout.trim().split('\n').length, checks.length);
});

test("npm pack in a checkout packs exports at dist/ and puts the checkout's package.json back", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'toolbus-npm-pack-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const checkout = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  // The checkout's package.json without the build (`prepare`), which this copy has no sources for.
  delete checkout.scripts.prepare;
  const text = `${JSON.stringify(checkout, null, 2)}\n`;
  await writeFile(join(dir, 'package.json'), text);
  for (const file of ['scripts/pack-manifest.ts', 'src/cli/package-manifest.ts']) {
    await cp(join(ROOT, file), join(dir, file));
  }
  await cp(join(ROOT, 'entry'), join(dir, 'entry'), { recursive: true });
  await mkdir(join(dir, 'dist'));
  await writeFile(join(dir, 'dist', 'index.js'), 'export const built = true;\n');
  await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  const env = { ...process.env };
  delete env.NODE_OPTIONS;

  const { stdout } = await run('npm', ['pack', '--json'], { cwd: dir, env });
  const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
  assert.ok(packed);
  assert.ok(!packed.files.some((f) => f.path.startsWith('entry/')), 'entry/ stays out of the tarball');
  const { stdout: manifest } = await run('tar', ['-xzOf', packed.filename, 'package/package.json'], {
    cwd: dir,
  });
  const exports = (JSON.parse(manifest) as { exports: Record<string, { default?: string }> }).exports;
  assert.equal(exports['.']?.default, './dist/index.js');
  assert.equal(exports['./nats']?.default, './dist/bus/nats/index.js');
  assert.equal(
    await readFile(join(dir, 'package.json'), 'utf8'),
    text,
    'the checkout keeps its package.json',
  );
  assert.ok(!existsSync(join(dir, 'package.json.checkout')));

  // A pack that died between prepack and postpack left the checkout's manifest aside: say so, change nothing.
  await writeFile(join(dir, 'package.json.checkout'), text);
  await assert.rejects(run('npm', ['pack', '--json'], { cwd: dir, env }), (error: { stderr: string }) => {
    assert.match(error.stderr, /package\.json\.checkout is left from a pack that did not finish/);
    return true;
  });
  assert.equal(await readFile(join(dir, 'package.json'), 'utf8'), text);
});
