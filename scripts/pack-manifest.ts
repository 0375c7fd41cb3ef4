/**
 * `npm pack` and `npm publish` in a checkout: `prepack` swaps in package.json as packed (exports at
 * dist/, see src/cli/package-manifest.ts) and keeps the checkout's in package.json.checkout;
 * `postpack` puts it back. A pack that died between the two leaves package.json.checkout behind:
 * the next prepack refuses until it is moved back.
 *
 * Usage: node --import tsx scripts/pack-manifest.ts prepack|postpack
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { packedManifest } from '../src/cli/package-manifest.js';

const manifest = fileURLToPath(new URL('../package.json', import.meta.url));
const saved = `${manifest}.checkout`;
const step = process.argv[2];

if (step === 'prepack') {
  if (existsSync(saved)) {
    process.stderr.write(
      `pack-manifest: package.json.checkout is left from a pack that did not finish; ` +
        `move it back to package.json, then pack again\n`,
    );
    process.exit(1);
  }
  const text = readFileSync(manifest, 'utf8');
  writeFileSync(saved, text);
  writeFileSync(manifest, packedManifest(text));
} else if (step === 'postpack') {
  if (existsSync(saved)) renameSync(saved, manifest);
} else {
  process.stderr.write(`usage: node --import tsx scripts/pack-manifest.ts prepack|postpack\n`);
  process.exit(2);
}
