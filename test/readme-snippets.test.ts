/**
 * The README's TypeScript snippets cannot rot: every ```ts block is type-checked, linted with the
 * project's eslint config, checked by prettier, and run, as a reader would save and run it.
 *
 * Each block is preceded by a marker saying how it is used:
 * - `<!-- snippet: run -->`: a script; it must exit 0 on its own (closing what it opens) within a
 *   time limit. A model it needs is a local fake OpenAI server (`OPENAI_BASE_URL`).
 * - `<!-- snippet: module NAME -->`: a file the reader saves as NAME and hands to toolbus (a service
 *   module); it must load and default-export a function.
 * A block without a marker fails the test, so no snippet escapes. Blocks in other languages are not run
 * here; one marked `<!-- snippet: file NAME -->` (e.g. `nats-server.conf`) is used verbatim by the test
 * that reads it with `readmeFile(NAME)` (test/support/readme.ts).
 *
 * `import … from 'toolbus'` resolves to this checkout's sources (tsconfig `paths`, honoured by tsc and
 * tsx), so no build is needed; test/integration/pack-consumer.test.ts checks the installed package.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ESLint } from 'eslint';
import * as prettier from 'prettier';
import { chatCompletion, startFakeOpenAIServer } from './fixtures/fake-openai-server.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface Snippet {
  /** Where it is: the heading above it. */
  heading: string;
  line: number;
  kind: 'run' | 'module';
  file: string;
  code: string;
}

/** The entries a reader imports, mapped to the sources. */
const ENTRIES: Record<string, string> = {
  toolbus: 'src/index.ts',
  'toolbus/wire': 'src/wire/index.ts',
  'toolbus/gateway': 'src/gateway/index.ts',
  'toolbus/runtime': 'src/runtime/index.ts',
  'toolbus/runs': 'src/runs/index.ts',
  'toolbus/testing': 'src/testing/index.ts',
  'toolbus/nats': 'src/bus/nats/index.ts',
  'toolbus/sqlite': 'src/config/sqlite/index.ts',
  'toolbus/mcp': 'src/adapters/mcp/index.ts',
  'toolbus/openai': 'src/models/openai/index.ts',
  'toolbus/langchain': 'src/adapters/langchain/index.ts',
};

function snippetsOf(readme: string): Snippet[] {
  const lines = readme.split('\n');
  const out: Snippet[] = [];
  let heading = '(top)';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('#')) heading = line.replace(/^#+\s*/, '');
    if (line.trim() !== '```ts') continue;
    const end = lines.indexOf('```', i + 1);
    assert.ok(end > i, `README line ${i + 1}: a \`\`\`ts block that never ends`);
    // The marker: the last non-blank line before the fence.
    let j = i - 1;
    while (j >= 0 && lines[j]!.trim() === '') j--;
    const marker = /^<!-- snippet: (run|module)(?: (\S+))? -->$/.exec(lines[j]?.trim() ?? '');
    assert.ok(
      marker,
      `README line ${i + 1} (${heading}): a ts block needs a marker line before it: ` +
        '<!-- snippet: run --> or <!-- snippet: module NAME.ts -->',
    );
    const kind = marker[1] as 'run' | 'module';
    const file = kind === 'module' ? marker[2]! : `snippet-${out.length + 1}.ts`;
    assert.ok(
      file?.endsWith('.ts'),
      `README line ${i + 1}: a module marker names its file, e.g. echo-service.ts`,
    );
    out.push({ heading, line: i + 1, kind, file, code: lines.slice(i + 1, end).join('\n') + '\n' });
    i = end;
  }
  return out;
}

const snippets = snippetsOf(await readFile(join(ROOT, 'README.md'), 'utf8'));

test('the README has its snippets, each marked', () => {
  const headings = snippets.map((s) => s.heading);
  for (const expected of ['A tool in code', 'More kinds of tools', 'Write your own tool service']) {
    assert.ok(
      headings.includes(expected),
      `a ts snippet under "${expected}"; found under: ${headings.join(', ')}`,
    );
  }
});

test('every README snippet is lint-clean and prettier-clean', async () => {
  const eslint = new ESLint({ cwd: ROOT });
  const options = { ...(await prettier.resolveConfig(join(ROOT, 'src/index.ts'))), parser: 'typescript' };
  for (const s of snippets) {
    // A path inside the project, so the project's rules for a reader's file apply.
    const [result] = await eslint.lintText(s.code, { filePath: join(ROOT, 'examples', s.file) });
    const problems = (result?.messages ?? []).map((m) => `${m.line}:${m.column} ${m.message} (${m.ruleId})`);
    assert.deepEqual(problems, [], `README line ${s.line} (${s.heading}): eslint`);
    const formatted = await prettier.format(s.code, options);
    assert.equal(s.code, formatted, `README line ${s.line} (${s.heading}): not as prettier writes it`);
  }
});

test('every README snippet type-checks and runs', async (t) => {
  // Inside the project, so the reader's packages (zod, @langchain/core, ...) resolve from node_modules.
  const dir = await mkdtemp(join(ROOT, '.snippets-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  for (const s of snippets) await writeFile(join(dir, s.file), s.code);
  const paths = Object.fromEntries(Object.entries(ENTRIES).map(([k, v]) => [k, [join(ROOT, v)]]));
  await writeFile(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      extends: '../tsconfig.json',
      compilerOptions: { paths, rootDir: ROOT, noEmit: true },
      include: snippets.map((s) => s.file),
    }),
  );
  try {
    await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], { cwd: dir });
  } catch (error) {
    const { stdout } = error as { stdout: string };
    assert.fail(`the README snippets do not type-check:\n${stdout}`);
  }

  const model = await startFakeOpenAIServer();
  t.after(() => model.close());
  const tsx = join(ROOT, 'node_modules/tsx/dist/cli.mjs');
  for (const s of snippets) {
    await t.test(`${s.heading} (README line ${s.line})`, async () => {
      if (s.kind === 'module') {
        const probe = join(dir, `probe-${s.file}`);
        await writeFile(
          probe,
          `const m = await import('./${s.file}');\n` +
            `if (typeof m.default !== 'function') throw new Error('no default export function');\n` +
            `console.log('module ok');\n`,
        );
        const { stdout } = await run(process.execPath, [tsx, probe], { cwd: dir, timeout: 30_000 });
        assert.match(stdout, /module ok/);
        return;
      }
      const usesModel = s.code.includes('OpenAIChatCompletionClient');
      if (usesModel) {
        // The agent's model: one tool call, then the answer.
        model.reply(
          {
            json: chatCompletion({ toolCalls: [{ id: 'call_1', name: 'add', arguments: '{"a":2,"b":3}' }] }),
          },
          { json: chatCompletion({ content: '2 + 3 is 5.' }) },
        );
      }
      const env = {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        OPENAI_BASE_URL: model.baseURL,
        npm_config_offline: 'true',
      };
      let out: { stdout: string; stderr: string };
      try {
        out = await run(process.execPath, [tsx, join(dir, s.file)], { cwd: dir, env, timeout: 60_000 });
      } catch (error) {
        const e = error as { stdout?: string; stderr?: string; killed?: boolean; message: string };
        assert.fail(
          `${e.killed ? 'did not exit within 60 s (does it close what it opens?)' : 'failed'}: ` +
            `${e.stderr ?? e.message}\n${e.stdout ?? ''}`,
        );
      }
      assert.doesNotMatch(out.stderr, /Error|at .+:\d+:\d+/, out.stderr);
      assert.notEqual(out.stdout.trim(), '', 'prints something');
      if (usesModel) {
        assert.equal(model.pending, 0, 'the agent asked the model twice: the tool call, then the answer');
        assert.match(out.stdout, /2 \+ 3 is 5\./);
        // The tool result went back to the model: the LangChain tool really ran.
        const last = model.requests.at(-1)?.body as { messages: { role: string; content: unknown }[] };
        assert.ok(last.messages.some((m) => m.role === 'tool' && String(m.content).includes('5')));
      }
    });
  }
});
