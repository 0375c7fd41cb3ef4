/**
 * How `toolbus up` picks the gateway's token, and how the other commands find it: the token file in the
 * home (made once, reused, mode 0600), TOOLBUS_TOKEN, and `--no-auth` on loopback only.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gatewayTarget } from '../../src/cli/gateway-client.js';
import { ensureTokenFile, readTokenFile } from '../../src/cli/token-file.js';
import { interrupt, runCli, startCli } from '../support/cli.js';

const READY = /Press Ctrl-C to stop\./;

async function freshHome(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-up-auth-'));
  // Retried: under load the `up` of a test may still be writing its files when this runs.
  t.after(() => rm(home, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }));
  return home;
}

function urlOf(output: string): string {
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1];
  assert.ok(url, output);
  return url;
}

test('the token file is made once with mode 0600 and reused; a file others can read is replaced', async (t) => {
  const home = await freshHome(t);
  const io = { env: { TOOLBUS_HOME: home }, cwd: '/' };
  const first = ensureTokenFile(io);
  assert.equal(first.created, true);
  assert.equal(statSync(first.path).mode & 0o777, 0o600);
  assert.equal(ensureTokenFile(io).token, first.token, 'reused, so MCP client configs keep working');
  assert.equal(readTokenFile(io), first.token);
  await chmod(first.path, 0o644);
  assert.equal(readTokenFile(io), undefined, 'a readable token is no secret');
  const replaced = ensureTokenFile(io);
  assert.equal(replaced.created, true);
  assert.notEqual(replaced.token, first.token);
  assert.equal(statSync(replaced.path).mode & 0o777, 0o600);
  await writeFile(replaced.path, 'short\n', { mode: 0o600 });
  assert.equal(readTokenFile(io), undefined, 'not a token');
});

test('the CLI sends the home token only to a gateway on this machine', async (t) => {
  const home = await freshHome(t);
  const { token } = ensureTokenFile({ env: { TOOLBUS_HOME: home }, cwd: '/' });
  const io = (env: NodeJS.ProcessEnv) => ({ env: { TOOLBUS_HOME: home, ...env }, cwd: '/' }) as never;
  assert.equal(gatewayTarget({}, io({})).token, token);
  assert.equal(gatewayTarget({ url: 'http://localhost:9000' }, io({})).token, token);
  assert.equal(gatewayTarget({ url: 'https://tools.example.com' }, io({})).token, undefined);
  assert.equal(gatewayTarget({}, io({ TOOLBUS_TOKEN: 'from-env' })).token, 'from-env');
  assert.equal(gatewayTarget({ token: 'flag' }, io({ TOOLBUS_TOKEN: 'from-env' })).token, 'flag');
});

test('with TOOLBUS_TOKEN, up uses it and writes no file; the CLI uses it too', async (t) => {
  const home = await freshHome(t);
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TOOLBUS_HOME: home,
    TOOLBUS_TOKEN: 'env-token-123',
  };
  const up = await startCli(['up', '--port', '0'], env, READY);
  t.after(async () => void (await interrupt(up.child)));
  const url = urlOf(up.output());
  assert.match(up.output(), /token\s+from TOOLBUS_TOKEN/);
  assert.equal(existsSync(join(home, 'token')), false);
  const ok = await fetch(`${url}/api/v1/tools`, { headers: { authorization: 'Bearer env-token-123' } });
  assert.equal(ok.status, 200);
  const tools = await runCli(['tools', '--url', url], env);
  assert.equal(tools.code, 0, tools.stderr);
  const wrong = await runCli(['tools', '--url', url], { ...env, TOOLBUS_TOKEN: 'nope' });
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, /the token was refused/);
});

test('a CLI command in another home finds no token and says where it looks', async (t) => {
  const home = await freshHome(t);
  const other = await freshHome(t);
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home };
  const up = await startCli(['up', '--port', '0', '--no-examples'], env, READY);
  t.after(async () => void (await interrupt(up.child)));
  const url = urlOf(up.output());
  const lost = await runCli(['tools', '--url', url], { ...env, TOOLBUS_HOME: other });
  assert.equal(lost.code, 1);
  assert.match(
    lost.stderr,
    /no token found: run the command in the folder where 'toolbus up' runs.*TOOLBUS_HOME/,
  );
  const found = await runCli(['tools', '--url', url], env);
  assert.equal(found.code, 0, found.stderr);
  // The same token after a restart.
  const token = await readFile(join(home, 'token'), 'utf8');
  assert.equal(await interrupt(up.child), 0);
  const again = await startCli(['up', '--port', '0', '--no-examples'], env, READY);
  t.after(async () => void (await interrupt(again.child)));
  assert.match(again.output(), /token\s+in /);
  assert.equal(await readFile(join(home, 'token'), 'utf8'), token);
});

test('--no-auth serves without a token on loopback with a warning, and is refused on any other address', async (t) => {
  const home = await freshHome(t);
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home };
  const refused = await runCli(['up', '--no-auth', '--host', '0.0.0.0', '--port', '0'], env);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /--no-auth is allowed only on a loopback --host/);
  const wild = await runCli(['up', '--no-auth', '--allowed-hosts', '*', '--port', '0'], env);
  assert.equal(wild.code, 2);
  const badOrigin = await runCli(['up', '--allowed-origins', 'app.example.com', '--port', '0'], env);
  assert.equal(badOrigin.code, 2);
  assert.match(badOrigin.stderr, /--allowed-origins takes origins such as https:\/\/app\.example\.com/);

  const up = await startCli(['up', '--no-auth', '--port', '0', '--no-examples'], env, READY);
  t.after(async () => void (await interrupt(up.child)));
  assert.match(up.output(), /warning: --no-auth/);
  assert.equal(existsSync(join(home, 'token')), false);
  const url = urlOf(up.output());
  assert.equal((await fetch(`${url}/api/v1/tools`)).status, 200);
  // Host and Origin are still checked.
  const page = await fetch(`${url}/api/v1/tools`, { headers: { origin: 'https://attacker.example' } });
  assert.equal(page.status, 403);
});

test('beyond loopback, up needs its token and answers the allowed host names', async (t) => {
  const home = await freshHome(t);
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home };
  const up = await startCli(
    ['up', '--host', '0.0.0.0', '--port', '0', '--no-examples', '--allowed-hosts', 'tools.example.com'],
    env,
    READY,
  );
  t.after(async () => void (await interrupt(up.child)));
  const port = /gateway\s+http:\/\/[^:]+:(\d+)/.exec(up.output())?.[1];
  assert.ok(port, up.output());
  const token = (await readFile(join(home, 'token'), 'utf8')).trim();
  const { rawRequest } = await import('../support/raw-http.js');
  const base = `http://127.0.0.1:${port}`;
  const headers = { authorization: `Bearer ${token}` };
  assert.equal(
    (await rawRequest(base, '/api/v1/tools', { headers: { ...headers, host: 'tools.example.com' } })).status,
    200,
  );
  assert.equal(
    (await rawRequest(base, '/api/v1/tools', { headers: { ...headers, host: 'other.example.com' } })).status,
    403,
  );
  assert.equal(
    (await rawRequest(base, '/api/v1/tools', { headers: { host: 'tools.example.com' } })).status,
    401,
  );
});
