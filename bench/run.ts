/**
 * Runs every `bench/*.bench.ts` (or those whose name contains an argument) and prints their tables.
 * Usage: npm run bench [-- filter ...]
 */
import { readdirSync } from 'node:fs';
import { printTable, type BenchTable } from './harness.js';

/**
 * A table of figures other than throughput and latency (e.g. bytes per call), printed as given: a
 * suite may return it among its `BenchTable`s.
 */
export interface TextTable {
  title: string;
  /** The header cells. */
  columns: string[];
  /** One array of cells per row, in column order. */
  rows: string[][];
  /** Free-form lines printed under the table (targets, method). */
  notes?: string[];
}

/** What a `bench/*.bench.ts` module exports as default. */
type Suite = () => Promise<(BenchTable | TextTable)[]>;

function printTextTable(table: TextTable): void {
  const lines = [`\n## ${table.title}\n`, `| ${table.columns.join(' | ')} |`];
  lines.push(`|${table.columns.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`);
  for (const row of table.rows) lines.push(`| ${row.join(' | ')} |`);
  for (const note of table.notes ?? []) lines.push(`\n${note}`);
  process.stdout.write(lines.join('\n') + '\n');
}

const filters = process.argv.slice(2);
const dir = new URL('.', import.meta.url);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

process.stdout.write(`# toolbus benchmarks (node ${process.version}, ${new Date().toISOString()})\n`);
for (const file of files) {
  const mod = (await import(new URL(file, dir).href)) as { default: Suite };
  const tables = await mod.default();
  for (const table of tables) {
    if ('columns' in table) printTextTable(table);
    else printTable(table);
  }
}
process.exit(0);
