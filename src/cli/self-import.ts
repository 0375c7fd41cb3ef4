/**
 * @module Lets a user's module `import … from 'toolbus'` when the CLI runs from a checkout's sources.
 *
 * The package's exports load `dist/`, which a checkout only has after `npm run build`; so the
 * README's own `echo-service.ts` failed under `npm ci && npx toolbus service echo-service.ts` with
 * "Cannot find module …/dist/index.js". While the CLI runs from `src/` (through tsx), `toolbus` and
 * `toolbus/<leaf>` resolve to the same sources the CLI itself runs, so the service shares its classes.
 * A built, installed CLI registers nothing: its exports resolve normally.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { fileURLToPath } from 'node:url';

// Node's resolve hook, as plain JavaScript (the hooks thread loads it before any TypeScript loader). The
// mapped file URL goes on down the chain, so tsx resolves and compiles it like any other source file.
const HOOK = `
let targets = {};
export function initialize(data) { targets = data; }
export function resolve(specifier, context, next) {
  const url = targets[specifier];
  return next(url ?? specifier, context);
}`;

let registered = false;

/** Maps `toolbus` and `toolbus/<leaf>` to their `src/**.ts` files, from the package's `exports`. */
export function sourceTargets(packageRoot: URL): Record<string, string> {
  const pkg = JSON.parse(readFileSync(new URL('package.json', packageRoot), 'utf8')) as {
    name: string;
    exports?: Record<string, string | { default?: string }>;
  };
  const targets: Record<string, string> = {};
  for (const [subpath, entry] of Object.entries(pkg.exports ?? {})) {
    const target = typeof entry === 'string' ? entry : entry.default;
    const match = target && /^\.\/(?:entry|dist)\/(.+)\.js$/.exec(target);
    if (!match) continue;
    const source = new URL(`src/${match[1]}.ts`, packageRoot);
    if (existsSync(fileURLToPath(source))) targets[pkg.name + subpath.slice(1)] = source.href;
  }
  return targets;
}

/**
 * When this CLI runs from TypeScript sources, makes `import 'toolbus'` in modules loaded afterwards
 * resolve to those sources. Idempotent; a no-op from a built package or on a Node without
 * `module.register` (before 20.6), where the normal resolution applies.
 */
export function resolveSelfImportsToSources(): void {
  if (registered || !import.meta.url.endsWith('.ts')) return;
  const register = (nodeModule as { register?: typeof nodeModule.register }).register;
  if (typeof register !== 'function') return;
  registered = true;
  register(`data:text/javascript,${encodeURIComponent(HOOK)}`, {
    data: sourceTargets(new URL('../../', import.meta.url)),
  });
}
