/**
 * @module The files `toolbus init` writes: a project with a `FunctionTool`, a tool service with its two
 * config items (the seed's levels: a `tool-service/<id>` item and a `tool/<name>` item), a `node:test`
 * test that calls both, and a README. Kept apart from the command so the text can be read as it is.
 */

/** Exact versions the scaffold pins: those of the toolbus that runs `init`, so they are in its npm cache. */
export interface ScaffoldVersions {
  zod: string;
  typescript: string;
  tsx: string;
  typesNode: string;
  betterSqlite3: string;
  /** `@nats-io/transport-node`, `@nats-io/jetstream` and `@nats-io/kv` (the README's NATS step). */
  nats: string;
}

/** What {@link scaffoldFiles} fills in. */
export interface ScaffoldOptions {
  /** The npm package name, e.g. `my-tool` or `@me/my-tool`. */
  packageName: string;
  /** The tool service's id and topic: it listens on `non-persistent://tg/request/<serviceId>`. */
  serviceId: string;
  /** The `toolbus` dependency as package.json names it, e.g. `file:vendor/toolbus-0.1.0.tgz`. */
  toolbusSpec: string;
  /** The toolbus version the project starts from, for the README. */
  toolbusVersion: string;
  versions: ScaffoldVersions;
}

/** The tool the service backs, as its `tool/<name>` item names it. */
export const SCAFFOLD_TOOL_NAME = 'greet';

/**
 * The scaffold's test imports its sources through this, so test/layering.test.ts, which reads import
 * statements as text, does not take the template for imports of this file.
 */
const SRC = '../src';

/** The scaffold's files: relative path → contents. */
export function scaffoldFiles(options: ScaffoldOptions): Record<string, string> {
  const { packageName, serviceId: id, toolbusSpec, versions: v } = options;
  const tool = SCAFFOLD_TOOL_NAME;
  const vendored = toolbusSpec.startsWith('file:vendor/');
  const pkg = {
    name: packageName,
    version: '0.1.0',
    private: true,
    type: 'module',
    scripts: {
      test: 'tsc && node --test test/*.test.ts',
      start: 'toolbus up --service src/service.ts --watch',
    },
    dependencies: {
      'better-sqlite3': v.betterSqlite3,
      toolbus: toolbusSpec,
      zod: v.zod,
    },
    devDependencies: {
      '@types/node': v.typesNode,
      tsx: v.tsx,
      typescript: v.typescript,
    },
    // npm 11 lists the dependencies' install scripts it was not told about: better-sqlite3 compiles its
    // native part, esbuild (under tsx) checks its binary.
    allowScripts: { 'better-sqlite3': true, esbuild: true },
  };
  const tsconfig = {
    compilerOptions: {
      target: 'ES2022',
      lib: ['ES2023'],
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      types: ['node'],
      strict: true,
      noUncheckedIndexedAccess: true,
      verbatimModuleSyntax: true,
      isolatedModules: true,
      resolveJsonModule: true,
      skipLibCheck: true,
      noEmit: true,
    },
    include: ['src', 'test'],
  };
  const serviceItem = {
    id,
    'request-queue': `non-persistent://tg/request/${id}`,
    'response-queue': `non-persistent://tg/response/${id}`,
    'config-params': [{ name: 'greeting', required: false }],
  };
  const toolItem = {
    type: 'tool-service',
    name: tool,
    description: 'Greet someone by name',
    service: id,
    greeting: 'Hello',
    arguments: [{ name: 'name', type: 'string', description: 'Who to greet' }],
  };
  const json = (value: unknown): string => JSON.stringify(value, null, 2) + '\n';

  return {
    'package.json': json(pkg),
    'tsconfig.json': json(tsconfig),
    // npm passes node-options on as NODE_OPTIONS to `npx toolbus ...` and the npm scripts, so the
    // toolbus CLI (plain Node) can load src/service.ts.
    '.npmrc': 'node-options=--import tsx\n',
    '.gitignore': 'node_modules/\n.toolbus/\n',
    'config/tool-service.json': json(serviceItem),
    'config/tool.json': json(toolItem),
    'src/tools.ts': `import { z } from 'zod';
import { FunctionTool, ToolSet } from 'toolbus';

/**
 * A typed function tool: the model sees its name, description and JSON Schema, and every call is
 * checked against the schema before the function runs.
 */
export const wordCount = new FunctionTool(
  async ({ text }) => text.split(/\\s+/).filter((word) => word !== '').length,
  {
    name: 'word-count',
    description: 'Count the words in a text',
    parameters: z.object({ text: z.string().describe('The text to count the words of') }),
  },
);

/** This project's in-process tools, e.g. for \`new ToolUseAgent({ model, tools })\`. */
export const tools = new ToolSet([wordCount]);
`,
    'src/service.ts': `import { DynamicToolService, type MessageBus } from 'toolbus';

/**
 * The ${id} tool service. It answers tool calls on the bus, in the TrustGraph wire format, on the queues
 * non-persistent://tg/request/${id} and non-persistent://tg/response/${id}.
 *
 * \`toolbus up --service src/service.ts\` runs it in-process; \`toolbus service src/service.ts --nats URL\`
 * runs it in its own process. Both call this default export with their bus.
 */
export default (bus: MessageBus): DynamicToolService =>
  new DynamicToolService({
    bus,
    topic: '${id}',
    // user: who the agent acts for. config: the tool item's values for the service's config-params
    // ("greeting" in config/tool.json). args: what the model sent, checked against the tool's "arguments".
    async invoke(user, config, args) {
      const greeting = typeof config.greeting === 'string' ? config.greeting : 'Hello';
      return \`\${greeting}, \${String(args.name)}! (asked by \${user})\`;
    },
  });
`,
    'test/tools.test.ts': `import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { MemoryBus, MemoryConfigStore, ToolRegistry } from 'toolbus';
import createService from '${SRC}/service.js';
import { tools } from '${SRC}/tools.js';

test('word-count counts words, and a bad call is an error the model can read', async () => {
  const result = await tools.call('word-count', { text: 'one two  three' });
  assert.equal(result.isError, false, result.content);
  assert.equal(result.content, '3');

  const bad = await tools.call('word-count', { text: 42 });
  assert.equal(bad.isError, true);
  assert.match(bad.content, /argument 'text' must be a string/);
});

test('the ${id} service answers ${tool} through its two config items, as toolbus up serves it', async (t) => {
  const bus = new MemoryBus();
  const store = new MemoryConfigStore();
  const service = createService(bus);
  await service.start();
  const registry = new ToolRegistry({ store, bus });
  t.after(async () => {
    await registry.close();
    await service.stop();
    await store.close();
    await bus.close();
  });
  const item = (file: string): Promise<string> =>
    readFile(new URL(\`../config/\${file}\`, import.meta.url), 'utf8');
  await store.put('tool-service', '${id}', await item('tool-service.json'));
  await store.put('tool', '${tool}', await item('tool.json'));
  await registry.start();
  assert.deepEqual(registry.problems(), []);

  const result = await registry.tools.call('${tool}', { name: 'Ada' }, { user: 'alice' });
  assert.equal(result.isError, false, result.content);
  assert.equal(result.content, 'Hello, Ada! (asked by alice)');
});
`,
    'README.md': readme(options, vendored),
  };
}

// npm 11.19 matches a tarball dependency's allowScripts key against its absolute path on a first
// install, so no key in package.json can quiet this.
const PREPARE_NOTE = `
npm may list toolbus's \`prepare\` script among install scripts "not yet covered by allowScripts": it
builds a toolbus checkout, and npm never runs it for a tarball, so there is nothing to approve.
`;

function readme(options: ScaffoldOptions, vendored: boolean): string {
  const { packageName, serviceId: id, toolbusSpec, toolbusVersion, versions: v } = options;
  const tool = SCAFFOLD_TOOL_NAME;
  const nats = 'nats://127.0.0.1:4222';
  const source = vendored
    ? `\`${toolbusSpec.slice('file:'.length)}\`, the toolbus ${toolbusVersion} that ran \`toolbus init\`
(toolbus is not on the npm registry). To move to another toolbus, put its tarball there (\`npm pack\`
in a toolbus checkout) or point the \`toolbus\` dependency at it, then run \`npm install\`.`
    : `\`${toolbusSpec}\` (package.json's \`toolbus\` dependency).`;
  return `# ${packageName}

Your own tools on toolbus: a typed function tool and a tool service.

| file | what |
| --- | --- |
| \`src/tools.ts\` | \`word-count\`, a \`FunctionTool\`: a typed function that agents call in-process |
| \`src/service.ts\` | the \`${id}\` tool service: answers tool calls on the bus, in another process or in \`toolbus up\` |
| \`config/tool-service.json\` | config item \`tool-service/${id}\`: where the service listens, which config it takes |
| \`config/tool.json\` | config item \`tool/${tool}\`: the tool agents see, backed by the service (one service can back many tools) |
| \`test/tools.test.ts\` | calls both, the service through its config items over an in-memory bus |

toolbus comes from ${source}

## Run it

\`\`\`sh
npm install        # compiles better-sqlite3 (toolbus up's config file), about a minute
npm test           # type-check, then the tests
\`\`\`

\`npm install --prefer-offline\` takes every package from the npm cache when it is there (after
\`npm ci\` in a toolbus checkout, all of them are) and fetches only registry metadata.

In one process, with no server: start \`toolbus up\` with your service (\`--watch\` reloads it when you
save), then in a second terminal, in this folder, declare the tool and call it:

\`\`\`sh
npm start          # toolbus up --service src/service.ts --watch
npx toolbus config put tool-service/${id} < config/tool-service.json
npx toolbus config put tool/${tool} < config/tool.json
npx toolbus call ${tool} name=Ada --user alice
\`\`\`

On NATS, with the service in its own process (as many as you like, on any machine; they share the
load). This needs \`nats-server -js\` running and the NATS client packages:

\`\`\`sh
npm install @nats-io/transport-node@${v.nats} @nats-io/jetstream@${v.nats} @nats-io/kv@${v.nats}
npx toolbus up --nats ${nats}
npx toolbus service src/service.ts --nats ${nats}
npx toolbus config put tool-service/${id} --nats ${nats} < config/tool-service.json
npx toolbus config put tool/${tool} --nats ${nats} < config/tool.json
npx toolbus call ${tool} name=Ada --nats ${nats}
\`\`\`

\`.npmrc\` sets \`node-options=--import tsx\`, so \`npx toolbus\` and the npm scripts load TypeScript
modules such as \`src/service.ts\`. \`npx toolbus --help\` explains every command.
${vendored ? PREPARE_NOTE : ''}`;
}
