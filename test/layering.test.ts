/**
 * Guard test: the dependency direction of DESIGN.md §1, checked from the file system (the same rules as
 * the `no-restricted-imports` blocks of eslint.config.js, plus the index-only rule of STYLE.md §1).
 *
 * - errors/ (floor 0) imports nothing of toolbus; schema/ imports only errors/, and tools/ only errors/
 *   and schema/;
 * - no layer imports a layer above it (ranks below);
 * - a leaf (bus/nats, config/sqlite, config/nats-kv, audit/sqlite, audit/nats, adapters/mcp,
 *   adapters/langchain, models/openai) is imported only by cli/ (or by a leaf of the same client
 *   family, e.g. the `toolbus/nats` entry re-exporting the NATS key-value store);
 * - a heavy client package is imported only inside its own leaf;
 * - another layer is reached only through its `index.ts`;
 * - no `eslint-disable` of no-restricted-imports (or a blanket `eslint-disable`) appears in src/.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';

/** Leaves and the client family each belongs to. */
const LEAVES: Record<string, string> = {
  'bus/nats': 'nats',
  'config/nats-kv': 'nats',
  'config/sqlite': 'sqlite',
  'audit/sqlite': 'sqlite',
  'audit/nats': 'nats',
  'adapters/mcp': 'mcp',
  'adapters/langchain': 'langchain',
  'models/openai': 'openai',
};

/**
 * Heavy packages (by prefix) and the client family allowed to import them; `cli` for the OpenTelemetry
 * SDK, which only the CLI starts (the core uses `@opentelemetry/api` alone).
 */
const HEAVY: [prefix: string, family: string][] = [
  ['@nats-io/', 'nats'],
  ['better-sqlite3', 'sqlite'],
  ['@modelcontextprotocol/', 'mcp'],
  ['@langchain/', 'langchain'],
  ['openai', 'openai'],
  ['@opentelemetry/sdk-', 'cli'],
  ['@opentelemetry/exporter-', 'cli'],
];

/** Dependency rank of each layer: a file may import only layers of equal or lower rank. */
const RANK: Record<string, number> = {
  errors: -1,
  schema: 0,
  tools: 1,
  bus: 2,
  config: 2,
  models: 2,
  services: 3,
  registry: 4,
  'adapters/http': 4,
  // Approval requests and saved runs over config and the bus; agents keep their runs there.
  runs: 4.5,
  agents: 5,
  // Observes tools, services, registry, bus and models; only cli/ wires it (the gateway takes a function).
  observability: 5.5,
  // The audit log's contract and hooks (tools' events in, entries out); the gateway serves its reader.
  audit: 5.5,
  // Identity, roles, tool policy and quotas over tools, config and the registry's config mirror.
  policy: 5.5,
  gateway: 6,
  cli: 7,
  '(root)': 8,
};
const LEAF_RANK = 5.5;

/** The layer of a path relative to src/ (`bus/nats/x.ts` → `bus/nats`, `index.ts` → `(root)`). */
function layerOf(path: string): string {
  for (const leaf of [...Object.keys(LEAVES), 'adapters/http']) {
    if (path.startsWith(`${leaf}/`)) return leaf;
  }
  const slash = path.indexOf('/');
  return slash === -1 ? '(root)' : path.slice(0, slash);
}

function rankOf(layer: string): number {
  return layer in LEAVES ? LEAF_RANK : (RANK[layer] ?? RANK['(root)']!);
}

/** Removes comments, so imports quoted in JSDoc examples do not count. */
function stripComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
}

const IMPORT =
  /(?:^|[;\s])(?:import|export)\s[^'";]*?from\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)|^\s*import\s+['"]([^'"]+)['"]/gm;

/** The module specifiers a source file imports. */
export function importsOf(source: string): string[] {
  const out: string[] = [];
  for (const m of stripComments(source).matchAll(IMPORT)) out.push((m[1] ?? m[2] ?? m[3]) as string);
  return out;
}

/**
 * Checks a tree of sources (paths relative to src/, posix separators) and returns one line per
 * violation, each naming the offending file.
 */
export function checkLayering(files: ReadonlyMap<string, string>): string[] {
  const problems: string[] = [];
  for (const [file, source] of files) {
    const from = layerOf(file);
    const fromFamily = LEAVES[from];
    if (
      /eslint-disable(?:-next-line|-line)?(?:\s+[^*\n]*no-restricted-imports|\s*(?:\*\/|$))/m.test(source)
    ) {
      problems.push(`${file}: disables no-restricted-imports (eslint-disable); fix the import instead`);
    }
    for (const spec of importsOf(source)) {
      if (!spec.startsWith('.')) {
        const heavy = HEAVY.find(([prefix]) => spec === prefix || spec.startsWith(prefix));
        if (heavy !== undefined && heavy[1] !== (fromFamily ?? from)) {
          problems.push(
            `${file}: imports the heavy package '${spec}' outside its leaf (only the ${heavy[1]} leaf may)`,
          );
        }
        continue;
      }
      const target = posix.normalize(posix.join(posix.dirname(file), spec));
      if (target.startsWith('..')) continue; // outside src/
      const to = layerOf(target);
      if (to === from) continue;
      const toFamily = LEAVES[to];
      if (toFamily !== undefined) {
        if (from !== 'cli' && toFamily !== fromFamily) {
          problems.push(
            `${file}: imports the leaf '${to}' (${spec}); only cli/, tests, benches and examples may`,
          );
        }
      } else if (from === 'errors') {
        problems.push(`${file}: errors/ imports '${to}' (${spec}); floor 0 imports nothing of toolbus`);
      } else if (
        (from === 'schema' && to !== 'errors') ||
        (from === 'tools' && to !== 'errors' && to !== 'schema')
      ) {
        problems.push(
          `${file}: ${from}/ imports '${to}' (${spec}); schema/ and tools/ know nothing of layers above`,
        );
      } else if (rankOf(to) > rankOf(from)) {
        problems.push(
          `${file}: imports the higher layer '${to}' (${spec}); dependencies point down (DESIGN.md §1)`,
        );
      }
      // The toolbus/nats entry (bus/nats/index.ts) re-exports config/nats-kv: importing that index back
      // would be a cycle, so the store reaches the family's shared connection and error modules directly.
      const sharedConnect =
        from === 'config/nats-kv' &&
        (target === 'bus/nats/connect.js' ||
          target === 'bus/nats/connection-state.js' ||
          target === 'bus/nats/jetstream-errors.js');
      if (target !== `${to}/index.js` && !sharedConnect) {
        problems.push(`${file}: imports '${spec}'; other layers import only '${to}/index.js'`);
      }
    }
  }
  return problems;
}

function readTree(root: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) {
        files.set(relative(root, path).split('\\').join('/'), readFileSync(path, 'utf8'));
      }
    }
  };
  walk(root);
  return files;
}

describe('layering', () => {
  test('src/ obeys the layering rules', () => {
    const src = join(dirname(new URL(import.meta.url).pathname), '..', 'src');
    const files = readTree(src);
    assert.ok(files.size > 10, 'found the sources');
    const problems = checkLayering(files);
    assert.deepEqual(problems, [], `layering violations:\n${problems.join('\n')}`);
  });

  describe('the checker catches each kind of violation, naming the file', () => {
    const cases: [string, Record<string, string>, string][] = [
      [
        'tools/ importing a layer above',
        { 'tools/x.ts': "import { MemoryBus } from '../bus/index.js';" },
        "tools/x.ts: tools/ imports 'bus'",
      ],
      [
        'schema/ importing tools/',
        { 'schema/x.ts': "import { ToolSet } from '../tools/index.js';" },
        "schema/x.ts: schema/ imports 'tools'",
      ],
      [
        'errors/ importing anything of toolbus',
        { 'errors/x.ts': "import { jsonDepth } from '../schema/index.js';" },
        "errors/x.ts: errors/ imports 'schema'",
      ],
      [
        'a lower layer importing a higher one',
        { 'bus/x.ts': "import { ToolRegistry } from '../registry/index.js';" },
        "bus/x.ts: imports the higher layer 'registry'",
      ],
      [
        'a leaf imported outside cli/',
        { 'registry/x.ts': "import { NatsBus } from '../bus/nats/index.js';" },
        "registry/x.ts: imports the leaf 'bus/nats'",
      ],
      [
        'a leaf imported by the root entry',
        { 'index.ts': "export { NatsBus } from './bus/nats/index.js';" },
        'index.ts: imports the leaf',
      ],
      [
        "a same-family leaf's internals other than the shared connect module",
        { 'config/nats-kv/x.ts': "import { NatsBus } from '../../bus/nats/nats-bus.js';" },
        "config/nats-kv/x.ts: imports '../../bus/nats/nats-bus.js'",
      ],
      [
        'a heavy package outside its leaf',
        { 'services/x.ts': "import { connect } from '@nats-io/transport-node';" },
        "services/x.ts: imports the heavy package '@nats-io/transport-node'",
      ],
      [
        'a heavy package in the wrong leaf',
        { 'adapters/mcp/x.ts': "import OpenAI from 'openai';" },
        "adapters/mcp/x.ts: imports the heavy package 'openai'",
      ],
      [
        'the OpenTelemetry SDK outside cli/',
        { 'tools/x.ts': "const { NodeSDK } = await import('@opentelemetry/sdk-node');" },
        "tools/x.ts: imports the heavy package '@opentelemetry/sdk-node'",
      ],
      [
        'a dynamic import of a heavy package',
        { 'agents/x.ts': "const m = await import('better-sqlite3');" },
        "agents/x.ts: imports the heavy package 'better-sqlite3'",
      ],
      [
        "another layer's internals instead of its index",
        { 'agents/x.ts': "import { ToolSet } from '../tools/tool-set.js';" },
        "agents/x.ts: imports '../tools/tool-set.js'",
      ],
      [
        'an eslint-disable of no-restricted-imports',
        {
          'agents/x.ts':
            "// eslint-disable-next-line no-restricted-imports\nimport { a } from '../tools/index.js';",
        },
        'agents/x.ts: disables no-restricted-imports',
      ],
      [
        'a blanket eslint-disable',
        { 'agents/x.ts': '/* eslint-disable */\nexport const a = 1;' },
        'agents/x.ts: disables',
      ],
    ];
    for (const [name, tree, expected] of cases) {
      test(name, () => {
        const problems = checkLayering(new Map(Object.entries(tree)));
        assert.ok(
          problems.some((p) => p.startsWith(expected)),
          `expected a problem starting with ${JSON.stringify(expected)}, got ${JSON.stringify(problems)}`,
        );
      });
    }

    test('allowed: cli/ importing a leaf, a leaf re-exporting a same-family leaf, schema/ using errors/, config/nats-kv using bus/nats/connect.js', () => {
      const problems = checkLayering(
        new Map(
          Object.entries({
            'cli/x.ts': "import { NatsBus } from '../bus/nats/index.js';",
            'cli/y.ts': "const { NodeSDK } = await import('@opentelemetry/sdk-node');",
            'services/x.ts': "import { trace } from '@opentelemetry/api';",
            'bus/nats/index.ts': "export { NatsKvConfigStore } from '../../config/nats-kv/index.js';",
            'bus/nats/x.ts':
              "import { connect } from '@nats-io/transport-node';\nimport { a } from '../index.js';",
            'schema/x.ts': "import { ToolbusError } from '../errors/index.js';",
            'config/nats-kv/x.ts': "import { connectNats } from '../../bus/nats/connect.js';",
            'tools/x.ts':
              "/** import { NatsBus } from 'toolbus/nats'; */\nimport type { A } from '../schema/index.js';",
          }),
        ),
      );
      assert.deepEqual(problems, []);
    });
  });
});
