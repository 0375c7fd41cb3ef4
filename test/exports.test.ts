/**
 * Guard test: the root export surface. Every exported error class has a string `code` and
 * `name === class name`; importing the root entry loads none of the heavy client packages.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as root from '../src/index.js';

const repo = fileURLToPath(new URL('..', import.meta.url));

/** Heavy peers that `import "toolbus"` must not load (the OpenTelemetry API is a dependency; its SDK is not). */
const HEAVY =
  /\/node_modules\/(openai|@nats-io\/[^/]+|@modelcontextprotocol\/[^/]+|@langchain\/[^/]+|better-sqlite3|@opentelemetry\/(?:sdk|exporter)-[^/]+)\//;

type ErrorClass = new (...args: unknown[]) => Error;

/** Constructs an error class with the first argument shape it accepts. */
function probe(ErrorClass: ErrorClass): Error | undefined {
  const shapes: unknown[][] = [
    ['tool-error', 'probe message', {}],
    ['probe message', {}],
    ['probe message'],
    [{ message: 'probe message' }],
  ];
  for (const args of shapes) {
    try {
      const error = new ErrorClass(...args);
      if (error instanceof ErrorClass) return error;
    } catch {
      // try the next shape
    }
  }
  return undefined;
}

describe('root exports', () => {
  const errorClasses: [string, ErrorClass][] = [];
  for (const [name, value] of Object.entries(root as Record<string, unknown>)) {
    if (typeof value === 'function' && (value as { prototype?: unknown }).prototype instanceof Error) {
      errorClasses.push([name, value as ErrorClass]);
    }
  }

  test('the error classes are exported', () => {
    const names = errorClasses.map(([name]) => name);
    assert.ok(names.includes('ToolbusError') && names.includes('ToolError'), names.join(', '));
  });

  for (const [exportName, ErrorClass] of errorClasses) {
    test(`${exportName}: a ToolbusError with a string code and name === '${ErrorClass.name}'`, () => {
      assert.equal(exportName, ErrorClass.name, 'exported under its class name');
      const error = probe(ErrorClass);
      assert.ok(error !== undefined, `${exportName} could not be constructed with any usual argument shape`);
      assert.ok(error instanceof root.ToolbusError, `${exportName} extends ToolbusError`);
      assert.equal(typeof (error as { code?: unknown }).code, 'string');
      assert.equal(error.name, ErrorClass.name);
    });
  }
});

/**
 * Imports `entry` in a child process with a module resolve hook that records every resolved URL, and
 * returns those URLs.
 */
async function resolvedBy(entry: string): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'toolbus-exports-'));
  const out = join(dir, 'resolved.txt');
  try {
    const hooks = [
      "import { appendFileSync } from 'node:fs';",
      'let out;',
      'export async function initialize(data) { out = data.out; }',
      'export async function resolve(specifier, context, next) {',
      '  const result = await next(specifier, context);',
      "  appendFileSync(out, result.url + '\\n');",
      '  return result;',
      '}',
    ].join('\n');
    const script = [
      "import { register } from 'node:module';",
      `register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)}, { data: { out: ${JSON.stringify(out)} } });`,
      `await import(${JSON.stringify(pathToFileURL(join(repo, entry)).href)});`,
    ].join('\n');
    await new Promise<void>((resolve, reject) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', '--input-type=module', '-e', script],
        { cwd: repo, timeout: 60_000 },
        (error, _stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve()),
      );
    });
    return readFileSync(out, 'utf8').split('\n').filter(Boolean);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('import "toolbus" loads no heavy client', () => {
  test('src/index.ts resolves none of openai, @nats-io/*, @modelcontextprotocol/*, @langchain/*, better-sqlite3', async () => {
    const urls = await resolvedBy('src/index.ts');
    assert.ok(
      urls.some((u) => u.endsWith('/src/tools/index.ts')),
      'the recorder saw the root entry load',
    );
    const heavy = urls.filter((u) => HEAVY.test(u));
    assert.deepEqual(heavy, [], `the root entry loaded heavy packages:\n${heavy.join('\n')}`);
  });

  test('the recorder does see a heavy client when a leaf loads one (so the check above can fail)', async () => {
    const urls = await resolvedBy('src/models/openai/index.ts');
    assert.ok(
      urls.some((u) => HEAVY.test(u)),
      'loading the openai leaf resolved the openai package',
    );
  });
});

/** The public entries of package.json `exports`, each with the source file it is built from. */
function publicEntries(): { key: string; source: string }[] {
  const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
    exports: Record<string, string | { types: string; default: string }>;
  };
  return Object.entries(pkg.exports)
    .filter(([key]) => key !== './package.json')
    .map(([key, target]) => {
      const built = typeof target === 'string' ? target : target.default;
      return { key, source: join('src', built.replace(/^\.\/(?:entry|dist)\//, '').replace(/\.js$/, '.ts')) };
    });
}

/** Every name an entry file exports (values and types), read from its `export { … }` lists. */
function exportedNames(source: string): string[] {
  const text = readFileSync(join(repo, source), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
  assert.doesNotMatch(text, /export \*/, `${source}: entries list their names (no export *)`);
  const names: string[] = [];
  for (const m of text.matchAll(/export (?:type )?\{([^}]*)\}/g)) {
    for (const part of m[1]!.split(',')) {
      const name = part
        .trim()
        .replace(/^type\s+/, '')
        .split(/\s+as\s+/)
        .pop();
      if (name) names.push(name);
    }
  }
  return names;
}

describe('the public surface', () => {
  test('the root has at most 60 names, values and types together', () => {
    const names = exportedNames('src/index.ts');
    assert.ok(names.length <= 60, `the root exports ${names.length} names:\n${names.join(', ')}`);
    assert.ok(
      names.includes('FunctionTool') && names.includes('ToolRegistry'),
      'the authoring names are there',
    );
  });

  test('no name is exported by two public entries', () => {
    const owners = new Map<string, string[]>();
    for (const { key, source } of publicEntries()) {
      for (const name of exportedNames(source)) owners.set(name, [...(owners.get(name) ?? []), key]);
    }
    const twice = [...owners]
      .filter(([, keys]) => keys.length > 1)
      .map(([n, keys]) => `${n}: ${keys.join(', ')}`);
    assert.deepEqual(twice, []);
  });

  test('toolbus/wire, /gateway, /runtime, /runs and /testing load no heavy client either', async () => {
    for (const source of [
      'src/wire/index.ts',
      'src/gateway/index.ts',
      'src/runtime/index.ts',
      'src/runs/index.ts',
      'src/testing/index.ts',
    ]) {
      const heavy = (await resolvedBy(source)).filter((u) => HEAVY.test(u));
      assert.deepEqual(heavy, [], `${source} loaded heavy packages:\n${heavy.join('\n')}`);
    }
  });
});
