import { test } from 'node:test';
import assert from 'node:assert/strict';
import { redactMachinePaths } from './redact-paths.js';

test('machine paths become …/<file name>; routes, URLs and ordinary text stay', () => {
  const cases: [string, string][] = [
    [
      "unable to open database file '/home/alice/.toolbus/config.db'",
      "unable to open database file '…/config.db'",
    ],
    ['spawn /usr/local/bin/weather-mcp ENOENT', 'spawn …/weather-mcp ENOENT'],
    ['at file:///work/main/src/x.ts:10:3', 'at …/x.ts:10:3'],
    [`cannot read ${process.cwd()}/secrets.json`, 'cannot read …/secrets.json'],
    ['EACCES C:\\Users\\bob\\toolbus\\config.db', 'EACCES …/config.db'],
    ['/tmp', '…/tmp'],
    [
      'no route for GET /api/v1/nothing; see /api/v1/health',
      'no route for GET /api/v1/nothing; see /api/v1/health',
    ],
    ['POST is not allowed on /mcp; use GET', 'POST is not allowed on /mcp; use GET'],
    ['fetch http://example.com/home/x failed', 'fetch http://example.com/home/x failed'],
    ['config tool/home: bad', 'config tool/home: bad'],
    ['a/b and 1/2', 'a/b and 1/2'],
  ];
  for (const [input, expected] of cases) assert.equal(redactMachinePaths(input), expected, input);
});
