import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openBrowser } from './open-browser.js';

test('only an http(s) URL is handed to an opener', async () => {
  // Nothing is started for these: the answer comes before any process could be.
  assert.equal(await openBrowser('file:///etc/passwd', 'linux'), false);
  assert.equal(await openBrowser('javascript:alert(1)', 'darwin'), false);
  assert.equal(await openBrowser('ms-settings:', 'win32'), false);
  assert.equal(await openBrowser('not a url', 'linux'), false);
});
