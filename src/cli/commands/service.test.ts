import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serviceLoadErrorMessage } from './service.js';

test('a TypeScript service module that plain Node cannot load gets the fix, not only "Unknown file extension"', () => {
  const error = Object.assign(new TypeError('Unknown file extension ".ts" for /home/me/echo-service.ts'), {
    code: 'ERR_UNKNOWN_FILE_EXTENSION',
  });
  const message = serviceLoadErrorMessage('echo-service.ts', error);
  assert.match(message, /^cannot load the service module 'echo-service.ts': Unknown file extension ".ts"/);
  assert.match(message, /compile the module to JavaScript/);
  assert.match(message, /NODE_OPTIONS='--import tsx' npx toolbus service echo-service\.ts/);

  const missing = Object.assign(new Error("Cannot find module '/home/me/nope.js'"), {
    code: 'ERR_MODULE_NOT_FOUND',
  });
  assert.equal(
    serviceLoadErrorMessage('nope.js', missing),
    "cannot load the service module 'nope.js': Cannot find module '/home/me/nope.js'",
  );
});
