/**
 * Compiles the example joke service that `toolbus up` starts into `<outDir>/examples/joke-service/`, so a
 * built, installed package runs it on plain Node. The example imports the library from `src/`; here that
 * import points at the built root entry (`<outDir>/index.js`), so the example and the CLI share one copy
 * of every class. Its own modules (jokes.ts) are bundled in; packages stay external.
 *
 * Usage: node scripts/build-examples.mjs [outDir]   (default: dist; run by `npm run build`)
 */
import { join, resolve } from 'node:path';
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
      name: 'toolbus-built-root',
      setup(b) {
        b.onResolve({ filter: /\/src\/index\.js$/ }, (args) => {
          if (resolve(args.resolveDir, args.path.replace(/\.js$/, '.ts')) !== LIBRARY_ROOT) return undefined;
          // From <outDir>/examples/joke-service/ to <outDir>/index.js.
          return { path: '../../index.js', external: true };
        });
      },
    },
  ],
});
