/**
 * @module `toolbus init [dir]`: scaffold a project with a function tool, a tool service and its two
 * config items, and a test, that passes its own `npm test`.
 *
 * toolbus is not on the npm registry, so by default the project depends on a tarball of the toolbus
 * that runs `init`, packed into `<dir>/vendor/` with `npm pack`: it installs from that file, with no
 * link back to this toolbus (a `file:` link to a checkout would make npm run the checkout's build on
 * every install). The other dependencies are pinned to the versions this toolbus was installed and
 * tested with, which are in the npm cache after its own `npm ci`.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CliCommand, CliIO } from '../command.js';
import { ExitCode, UsageError } from '../command.js';
import { parseCommandArgs } from '../args.js';
import { SCAFFOLD_TOOL_NAME, scaffoldFiles, type ScaffoldVersions } from '../init-template.js';
import { packPackage } from '../package-manifest.js';

const help = `Usage: toolbus init [dir] [--name NAME] [--toolbus SPEC]

Create a toolbus project in dir (default: the current folder), which must be new or empty:

  src/tools.ts               a FunctionTool (word-count)
  src/service.ts             a tool service, the module 'toolbus up --service' and
                             'toolbus service' load
  config/tool-service.json   its two config items: tool-service/<name> and tool/${SCAFFOLD_TOOL_NAME}
  config/tool.json
  test/tools.test.ts         a node:test test that calls both
  package.json, tsconfig.json, .npmrc, README.md

Then: cd dir && npm install && npm test.

toolbus is not on the npm registry: the project depends on a tarball of this toolbus, packed into
dir/vendor/ with 'npm pack', so it needs no link to this copy. typescript, tsx, zod and
better-sqlite3 are pinned to the versions this toolbus uses, which its own 'npm ci' put in the npm
cache ('npm install --prefer-offline' then fetches only registry metadata).

Options:
  --name NAME        the package name, also the tool service's id (default: the folder's name)
  --toolbus SPEC     the toolbus dependency instead of a tarball, as npm install takes it, e.g.
                     file:../toolbus (a checkout, linked: npm install runs its build there)
                     or a version once published
  -h, --help         show this help

Examples:
  toolbus init my-tool
  toolbus init services/weather --name weather
`;

/** The folder of the toolbus package this CLI runs from (src/cli/commands/ and dist/cli/commands/ alike). */
const PACKAGE_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Entries that may already be in the folder: `git init` first is common. */
const ALLOWED_ENTRIES = new Set(['.git']);

/** npm's rule for a package name (lowercase, URL-safe, optionally scoped), as `npm init` checks it. */
const PACKAGE_NAME = /^(?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/;

interface PackageJson {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

/** The init command. */
export const command: CliCommand = {
  name: 'init',
  summary: 'create a project with your own tool, tool service and tests',
  help,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(argv, {
      name: { type: 'string' },
      toolbus: { type: 'string' },
    });
    if (positionals.length > 1) {
      throw new UsageError(`name one folder, got ${positionals.length}: ${positionals.join(' ')}`);
    }
    const shown = positionals[0] ?? '.';
    const dir = resolve(io.cwd, shown);
    const packageName = values.name ?? defaultPackageName(dir);
    if (!PACKAGE_NAME.test(packageName) || packageName.length > 214) {
      throw new UsageError(
        values.name === undefined
          ? `the folder name '${basename(dir)}' makes no npm package name; pass one, e.g. --name my-tool`
          : `--name '${packageName}' is not an npm package name: use lowercase letters, digits, '-', '.', '_' ` +
              `or '~', optionally with a scope, e.g. my-tool or @me/my-tool`,
      );
    }
    if (values.toolbus !== undefined && values.toolbus.trim() === '') {
      throw new UsageError('--toolbus needs a dependency spec, e.g. --toolbus file:../toolbus');
    }

    const existing = await entriesOf(dir);
    if (existing === 'not-a-folder') {
      io.stderr.write(`toolbus init: '${shown}' is a file, not a folder; name a new or empty folder\n`);
      return ExitCode.Error;
    }
    const clashing = existing.filter((entry) => !ALLOWED_ENTRIES.has(entry));
    if (clashing.length > 0) {
      const listed = clashing.slice(0, 5).join(', ') + (clashing.length > 5 ? ', ...' : '');
      io.stderr.write(
        `toolbus init: '${shown}' is not empty (it has ${listed}); toolbus init writes a new project ` +
          `and changes no existing files. Name a new or empty folder, e.g. toolbus init my-tool\n`,
      );
      return ExitCode.Error;
    }

    const toolbus = readPackageJson(join(PACKAGE_ROOT, 'package.json'));
    const serviceId = serviceIdFor(packageName);
    const made = await mkdir(dir, { recursive: true });
    try {
      const toolbusSpec = values.toolbus ?? (await packInto(join(dir, 'vendor'), io));
      const files = scaffoldFiles({
        packageName,
        serviceId,
        toolbusSpec,
        toolbusVersion: toolbus.version,
        versions: versionsOf(toolbus),
      });
      for (const [path, text] of Object.entries(files)) {
        await mkdir(dirname(join(dir, path)), { recursive: true });
        // 'wx': never overwrite, even if something appeared since the check.
        await writeFile(join(dir, path), text, { flag: 'wx' });
      }
    } catch (error) {
      // Leave no half-made project behind: the folder was empty (or absent) before.
      for (const entry of await readdir(dir).catch(() => [])) {
        if (!existing.includes(entry)) await rm(join(dir, entry), { recursive: true, force: true });
      }
      if (made !== undefined) await rm(made, { recursive: true, force: true });
      throw error;
    }

    const vendored =
      values.toolbus === undefined ? ` and vendor/ (this toolbus: it is not on the npm registry)` : '';
    io.stdout.write(
      `Created ${packageName} in ${shown}:\n` +
        `  src/tools.ts     the function tool word-count\n` +
        `  src/service.ts   the tool service ${serviceId}\n` +
        `  config/          its two items, tool-service/${serviceId} and tool/${SCAFFOLD_TOOL_NAME}\n` +
        `  test/            a test that calls both\n` +
        `  package.json, tsconfig.json, .npmrc, README.md${vendored}\n\n` +
        `Next:\n` +
        (shown === '.' ? '' : `  cd ${shown}\n`) +
        `  npm install      # compiles better-sqlite3, about a minute\n` +
        `  npm test\n` +
        `  npm start        # toolbus up with your service; README.md says what to try next\n`,
    );
    return ExitCode.Ok;
  },
};

/** The folder's entries, `[]` when it does not exist yet. */
async function entriesOf(dir: string): Promise<string[] | 'not-a-folder'> {
  try {
    return await readdir(dir);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'ENOENT') return [];
    if (code === 'ENOTDIR') return 'not-a-folder';
    throw error;
  }
}

/** The folder's name as a package name: `My Tool` → `my-tool`. */
function defaultPackageName(dir: string): string {
  return basename(dir)
    .toLowerCase()
    .replace(/[^a-z0-9._~-]+/g, '-')
    .replace(/^[^a-z0-9]+|-+$/g, '');
}

/** A name that is valid as a tool service id, a config key, a topic and a NATS subject token. */
export function serviceIdFor(packageName: string): string {
  const id = (packageName.split('/').pop() ?? '')
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^[^a-z0-9]+|-+$/g, '')
    .slice(0, 64);
  return id === '' ? 'my-service' : id;
}

function readPackageJson(path: string): PackageJson {
  return JSON.parse(readFileSync(path, 'utf8')) as PackageJson;
}

/** The versions this toolbus pins (its package.json keeps devDependencies when packed, too). */
function versionsOf(pkg: PackageJson): ScaffoldVersions {
  const all = { ...pkg.devDependencies, ...pkg.dependencies };
  // Fallbacks for a package.json without them; the values of toolbus 0.1.0.
  return {
    zod: all['zod'] ?? '4.6.7',
    typescript: all['typescript'] ?? '5.9.3',
    tsx: all['tsx'] ?? '4.23.15',
    typesNode: all['@types/node'] ?? '20.19.43',
    betterSqlite3: all['better-sqlite3'] ?? '12.9.0',
    nats: all['@nats-io/transport-node'] ?? '3.4.0',
  };
}

/**
 * Packs the toolbus this CLI runs from into `vendor` and returns the dependency spec for it. From a
 * checkout that is its current dist/ (nothing is rebuilt); from an installed package, the package as
 * installed.
 */
async function packInto(vendor: string, io: CliIO): Promise<string> {
  if (!existsSync(join(PACKAGE_ROOT, 'dist', 'index.js'))) {
    throw new Error(
      `the toolbus in ${PACKAGE_ROOT} has no build (dist/ is missing), so it cannot be packed for the new ` +
        `project: run 'npm run build' there, or pass --toolbus SPEC`,
    );
  }
  if (isOlderThanSources(PACKAGE_ROOT)) {
    io.stderr.write(
      `toolbus init: warning: ${join(PACKAGE_ROOT, 'dist')} is older than its src/; the project gets that ` +
        `older build. Run 'npm run build' there first to pack the current sources.\n`,
    );
  }
  await mkdir(vendor, { recursive: true });
  try {
    return `file:vendor/${basename(await packPackage(PACKAGE_ROOT, vendor, { signal: io.signal }))}`;
  } catch (error) {
    throw new Error(`${(error as Error).message}; pass --toolbus SPEC to depend on toolbus another way`, {
      cause: error,
    });
  }
}

/** True when a checkout's dist/index.js is older than a file under its src/ (an installed package has no src/). */
function isOlderThanSources(root: string): boolean {
  const src = join(root, 'src');
  if (!existsSync(src)) return false;
  const built = statSync(join(root, 'dist', 'index.js')).mtimeMs;
  const walk = (dir: string): boolean =>
    readdirSync(dir, { withFileTypes: true }).some((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return walk(path);
      return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && statSync(path).mtimeMs > built;
    });
  return walk(src);
}
