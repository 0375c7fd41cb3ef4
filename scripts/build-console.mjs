/**
 * Builds the web console (console/, Preact) into `<outDir>/console/`: index.html, console.js (one
 * minified bundle) and console.css. The gateway serves that folder at `/` and `/console/<file>`. The
 * bundle loads nothing from elsewhere (no CDN, no web fonts): the build fails if a URL other than an
 * XML namespace (which the DOM needs for SVG, and never fetches) ends up in it.
 *
 * Usage: node scripts/build-console.mjs [outDir]   (default: dist; run by `npm run build`)
 */
import { copyFile, mkdir, readFile, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const target = join(resolve(process.argv[2] ?? join(root, 'dist')), 'console');
const source = join(root, 'console');
// Built beside the target, then swapped in: a running gateway never serves half a build.
const outDir = `${target}.building-${process.pid}`;

/** XML namespaces: identifiers the DOM compares, not addresses anything is loaded from. */
const NAMESPACES = new Set([
  'http://www.w3.org/2000/svg',
  'http://www.w3.org/1998/Math/MathML',
  'http://www.w3.org/1999/xlink',
  'http://www.w3.org/1999/xhtml',
  'http://www.w3.org/XML/1998/namespace',
]);

try {
  await mkdir(outDir, { recursive: true });
  await build({
    entryPoints: { console: join(source, 'src/main.tsx') },
    outdir: outDir,
    bundle: true,
    minify: true,
    format: 'iife',
    platform: 'browser',
    target: ['chrome111', 'firefox115', 'safari16.4'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    legalComments: 'none',
    charset: 'utf8',
    logLevel: 'warning',
  });
  await copyFile(join(source, 'index.html'), join(outDir, 'index.html'));
  for (const file of ['index.html', 'console.js', 'console.css']) {
    const text = await readFile(join(outDir, file), 'utf8');
    const urls = [...text.matchAll(/(?:https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}[^\s"'`)<>]*/gi)]
      .map((m) => m[0])
      .filter((url) => !NAMESPACES.has(url));
    if (urls.length > 0) {
      throw new Error(
        `the console's ${file} names external URLs (${urls.slice(0, 5).join(', ')}); it must work offline`,
      );
    }
  }
  // The old build moves aside first, so the folder is missing only between two renames; a build
  // running at the same time (npm pack's and a test's) may win the race, and then this one steps back.
  const old = `${target}.old-${process.pid}`;
  await rename(target, old).catch(() => undefined);
  await rename(outDir, target).catch(async (error) => {
    if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
  });
  await rm(old, { recursive: true, force: true });
  await rm(outDir, { recursive: true, force: true });
} catch (error) {
  await rm(outDir, { recursive: true, force: true });
  throw error;
}
