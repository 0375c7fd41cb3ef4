import { connect } from 'node:net';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startLoopbackRedirect } from './loopback-redirect.js';

const request = (url: string, state: string, signal = new AbortController().signal) => ({
  url: new URL(url),
  redirectUrl: '',
  state,
  signal,
});

test('the loopback redirect binds 127.0.0.1, takes only its path with the expected state, and closes after one success', async (t) => {
  const opened: string[] = [];
  const loopback = await startLoopbackRedirect({ open: (url) => void opened.push(url.href) });
  t.after(() => loopback.close());
  assert.match(loopback.redirectUrl, /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
  const waiting = loopback.authorize(request('https://as.example.com/authorize?x=1', 'expected-state'));
  assert.deepEqual(opened, ['https://as.example.com/authorize?x=1']);

  const base = new URL(loopback.redirectUrl);
  assert.equal((await fetch(new URL('/other?state=expected-state', base))).status, 404);
  assert.equal((await fetch(`${loopback.redirectUrl}?code=c&state=forged`)).status, 400);
  assert.equal((await fetch(`${loopback.redirectUrl}?code=c`)).status, 400);
  assert.equal(
    (await fetch(`${loopback.redirectUrl}?code=c&state=expected-state`, { method: 'POST' })).status,
    404,
  );

  const answer = await fetch(
    `${loopback.redirectUrl}?code=the-code&state=expected-state&iss=https%3A%2F%2Fas`,
  );
  assert.equal(answer.status, 200);
  assert.equal(answer.headers.get('referrer-policy'), 'no-referrer');
  const body = await answer.text();
  assert.ok(!body.includes('the-code'), 'the page does not echo the code');
  const params = await waiting;
  assert.equal(params.get('code'), 'the-code');
  assert.equal(params.get('iss'), 'https://as');

  // Closed after that one success: nothing listens any more.
  await assert.rejects(fetch(`${loopback.redirectUrl}?code=again&state=expected-state`));
  await assert.rejects(loopback.authorize(request('https://as.example.com/a', 's')), { code: 'closed' });
});

test('the wait ends with a clear timeout, or on abort, and the listener closes', async (t) => {
  const slow = await startLoopbackRedirect({ open: () => undefined, timeoutMs: 50 });
  t.after(() => slow.close());
  await assert.rejects(slow.authorize(request('https://as.example.com/a', 's')), {
    code: 'timeout',
    message: /no browser came back to http:\/\/127\.0\.0\.1:\d+\/callback within 0 s; run the login again/,
  });
  await assert.rejects(fetch(`${slow.redirectUrl}?state=s&code=c`));

  const aborted = await startLoopbackRedirect({ open: () => undefined });
  t.after(() => aborted.close());
  const controller = new AbortController();
  const waiting = aborted.authorize(request('https://as.example.com/a', 's', controller.signal));
  controller.abort();
  await assert.rejects(waiting, { code: 'cancelled' });
});

test('a port that is taken is reported, not thrown as a raw socket error', async (t) => {
  const first = await startLoopbackRedirect({ open: () => undefined });
  t.after(() => first.close());
  const port = Number(new URL(first.redirectUrl).port);
  await assert.rejects(startLoopbackRedirect({ port, open: () => undefined }), {
    code: 'unavailable',
    message: new RegExp(`could not listen on 127\\.0\\.0\\.1:${port} \\(EADDRINUSE\\)`),
  });
});

test('the listener closes at once after the browser came back, though browsers keep connections open', async (t) => {
  const loopback = await startLoopbackRedirect({ open: () => undefined });
  const { port } = new URL(loopback.redirectUrl);
  // A connection the browser opened ahead and never used, as browsers do.
  const spare = connect(Number(port), '127.0.0.1');
  t.after(() => (spare.destroy(), loopback.close()));
  await new Promise((resolve) => spare.once('connect', resolve));
  const waiting = loopback.authorize(request('https://as.example.com/a', 's'));
  // fetch keeps its connection alive, as a browser does.
  const answer = await fetch(`${loopback.redirectUrl}?code=c&state=s`);
  assert.equal(answer.status, 200);
  assert.equal(answer.headers.get('connection'), 'close');
  await answer.text();
  assert.equal((await waiting).get('code'), 'c');
  let guard: ReturnType<typeof setTimeout> | undefined;
  const outcome = await Promise.race([
    loopback.close().then(() => 'closed'),
    // Only a hang guard: without the fix, the unused connection holds it for a minute.
    new Promise((resolve) => (guard = setTimeout(() => resolve('still open'), 20_000))),
  ]);
  clearTimeout(guard);
  assert.equal(outcome, 'closed');
});
