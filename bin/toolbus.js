#!/usr/bin/env node
// Runs the CLI: from the TypeScript sources through tsx in a checkout (so edits apply at once), or from
// the built dist/ in an installed package.
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const source = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const built = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const args = existsSync(source) ? ['--import', 'tsx', source] : [built];
const result = spawnSync(process.execPath, [...args, ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(result.status ?? 1);
