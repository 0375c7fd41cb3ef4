// The checkout's entries (entry/**) load the build through this. In a checkout with no build, importing
// toolbus says so in one line instead of Node's stack trace for a missing dist/ file. A packed package
// points its exports at dist/ directly (src/cli/package-manifest.ts), so it never runs this.
import { existsSync } from 'node:fs';

/**
 * Imports `dist/<path>` of this checkout, or ends the process with one line saying to run the build.
 * @param {string} path the built module, relative to dist/
 * @returns {Promise<Record<string, unknown>>}
 */
export async function loadBuilt(path) {
  const url = new URL(`../dist/${path}`, import.meta.url);
  if (!existsSync(url)) {
    process.stderr.write(
      `toolbus: this checkout has no build (dist/${path} is missing): run 'npm run build' in it first\n`,
    );
    process.exit(1);
  }
  return import(url.href);
}
