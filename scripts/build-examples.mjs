/**
 * Compiles the example joke service that `toolbus up` starts into `<outDir>/examples/joke-service/`, so a
 * built, installed package runs it on plain Node. The example imports the library's root entry from
 * `src/`; here the names it uses come from the built layer modules the root re-exports them from
 * (`<outDir>/services/index.js`, …), so the example and the CLI share one copy of every class, and the
 * layers it does not use are not loaded. Its own modules (jokes.ts) are bundled in; packages stay
 * external.
 *
 * Usage: node scripts/build-examples.mjs [outDir]   (default: dist; run by `npm run build`)
 */
import { join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const outDir = resolve(process.argv[2] ?? join(root, 'dist'));
const LIBRARY_ROOT = join(root, 'src', 'index.ts');

await build({
  entryPoints: [join(root, 'examples/joke-service/service.ts')],
  outfile: join(outDir, 'examples/joke-service/service.js'),
  bundle: true,
  packages: 'external',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  logLevel: 'warning',
  plugins: [
    {
      name: 'toolbus-built-layers',
      setup(b) {
        b.onResolve({ filter: /\/index\.js$/ }, (args) => {
          const source = resolve(args.resolveDir, args.path.replace(/\.js$/, '.ts'));
          // The root entry is bundled in: it only re-exports the layers...
          if (source === LIBRARY_ROOT) return { path: LIBRARY_ROOT };
          if (args.importer !== LIBRARY_ROOT) return undefined;
          // ...whose built modules stay external (from <outDir>/examples/joke-service/), and only those
          // the example uses are imported: a start of 'toolbus up' does not load the agents for it.
          const built = relative(join(root, 'src'), source).replace(/\.ts$/, '.js').split(sep).join('/');
          return { path: `../../${built}`, external: true, sideEffects: false };
        });
      },
    },
  ],
});
