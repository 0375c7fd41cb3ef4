#!/usr/bin/env node
// Runs the built CLI (dist/), or the TypeScript sources through tsx in a checkout that was not built.
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const built = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const source = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const args = existsSync(built) ? [built] : ['--import', 'tsx', source];
const result = spawnSync(process.execPath, [...args, ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(result.status ?? 1);
