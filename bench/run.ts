/**
 * Runs every `bench/*.bench.ts` (or those whose name contains an argument) and prints their tables.
 * Usage: npm run bench [-- filter ...]
 */
import { readdirSync } from 'node:fs';
import { printTable, type BenchSuite } from './harness.js';

const filters = process.argv.slice(2);
const dir = new URL('.', import.meta.url);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

process.stdout.write(`# toolbus benchmarks (node ${process.version}, ${new Date().toISOString()})\n`);
for (const file of files) {
  const mod = (await import(new URL(file, dir).href)) as { default: BenchSuite };
  const tables = await mod.default();
  for (const table of tables) printTable(table);
}
process.exit(0);
