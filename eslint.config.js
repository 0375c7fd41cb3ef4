// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import n from 'eslint-plugin-n';

/**
 * Layering (DESIGN.md §1): each layer may import only the layers below it, and nothing
 * outside cli/, tests, benchmarks and examples may import a leaf (a heavy-client adapter).
 * test/layering.test.ts checks the same rules from the file system.
 */
const leafPatterns = [
  '**/bus/nats/**',
  '**/config/sqlite/**',
  '**/config/nats-kv/**',
  '**/audit/sqlite/**',
  '**/audit/nats/**',
  '**/adapters/mcp/**',
  '**/adapters/langchain/**',
  '**/models/openai/**',
];
const peerPackages = [
  'better-sqlite3',
  'openai',
  '@nats-io/*',
  '@modelcontextprotocol/*',
  '@langchain/*',
  // Only the CLI starts the OpenTelemetry SDK; the core uses @opentelemetry/api alone.
  '@opentelemetry/sdk-*',
  '@opentelemetry/exporter-*',
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.toolbus/**', '.snippets-*/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    plugins: { n },
    languageOptions: { ecmaVersion: 2023, sourceType: 'module' },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'n/prefer-node-protocol': 'error',
      // TypeScript checks names; for the few plain .js/.mjs scripts this rule only misreports Node globals.
      'no-undef': 'off',
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.test.ts', 'src/cli/**'],
    rules: {
      'no-console': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  {
    // The web console: browser code, bundled by scripts/build-console.mjs.
    files: ['console/**/*.ts', 'console/**/*.tsx'],
    rules: {
      'no-console': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  {
    files: ['src/errors/**/*.ts'],
    ignores: ['src/**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['../*/**', '../*'], message: 'errors/ is floor 0: it imports nothing of toolbus.' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/schema/**/*.ts'],
    ignores: ['src/**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['../*/**', '!../errors/*'],
              message: 'schema/ imports only errors/ (DESIGN.md §1).',
            },
            { group: peerPackages, message: 'Heavy clients are imported only by their leaf (DESIGN.md §1).' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/tools/**/*.ts'],
    ignores: ['src/**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                '../bus/**',
                '../config/**',
                '../services/**',
                '../registry/**',
                '../models/**',
                '../agents/**',
                '../gateway/**',
                '../cli/**',
                '../adapters/**',
              ],
              message: 'schema/ and tools/ know nothing of the layers above them (DESIGN.md §1).',
            },
            { group: peerPackages, message: 'Heavy clients are imported only by their leaf (DESIGN.md §1).' },
          ],
        },
      ],
    },
  },
  {
    files: [
      'src/bus/*.ts',
      'src/config/*.ts',
      'src/services/**/*.ts',
      'src/registry/**/*.ts',
      'src/models/*.ts',
      'src/agents/**/*.ts',
      'src/runs/**/*.ts',
      'src/observability/**/*.ts',
      'src/audit/*.ts',
      'src/index.ts',
    ],
    ignores: ['src/**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: leafPatterns.map((p) => p.replace('**/', '**/')),
              message: 'Only cli/, tests and examples import a leaf (DESIGN.md §1).',
            },
            { group: peerPackages, message: 'Heavy clients are imported only by their leaf (DESIGN.md §1).' },
            { group: ['../gateway/**', '../cli/**'], message: 'Lower layers never import gateway/ or cli/.' },
          ],
        },
      ],
    },
  },
);
