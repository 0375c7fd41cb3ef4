/**
 * @module The README's code as tests use it, so a test runs exactly what a reader copies.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './cli.js';

/**
 * The code of the README's ```ts block marked `<!-- snippet: module NAME -->` (a file the reader saves
 * as NAME). Throws when there is none.
 */
export function readmeModule(name: string): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const marker = `<!-- snippet: module ${name} -->`;
  const at = readme.indexOf(marker);
  const block = at === -1 ? null : /```ts\n([\s\S]*?)```/.exec(readme.slice(at + marker.length));
  if (!block) throw new Error(`README.md has no ts block marked '${marker}'`);
  return block[1]!;
}

/**
 * The text of the README's fenced block (any language) marked `<!-- snippet: file NAME -->`: a file that
 * is not TypeScript, e.g. a server's configuration, which a test uses as the reader copies it. Throws
 * when there is none.
 */
export function readmeFile(name: string): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const marker = `<!-- snippet: file ${name} -->`;
  const at = readme.indexOf(marker);
  const block = at === -1 ? null : /```[\w-]*\n([\s\S]*?)```/.exec(readme.slice(at + marker.length));
  if (!block) throw new Error(`README.md has no block marked '${marker}'`);
  return block[1]!;
}
