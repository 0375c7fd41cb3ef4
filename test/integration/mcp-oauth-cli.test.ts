/**
 * `toolbus mcp login` end to end, as a user runs it: `toolbus config put mcp/remote` with an `oauth`
 * object, `toolbus mcp login remote --no-browser` (the test reads the printed URL and plays the browser,
 * which ends at the CLI's loopback listener), `toolbus mcp import remote`, `toolbus call`. No token
 * appears in any output, nor in `toolbus config get/list`; `logout` forgets the tokens.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SqliteConfigStore } from '../../src/config/sqlite/index.js';
import { ROOT, runCli, type CliRun } from '../support/cli.js';
import { startAuthServer } from '../fixtures/oauth-server.js';
import { startMcpOAuthServer } from '../fixtures/mcp-oauth-server.js';

/** Runs `toolbus mcp login`, plays the browser for the URL it prints, and resolves with how it ended. */
function loginWithBrowser(
  args: string[],
  env: NodeJS.ProcessEnv,
  browse: (url: string) => Promise<{ status: number }>,
): Promise<CliRun & { browserStatus: number | undefined }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), ...args], {
      cwd: ROOT,
      env,
    });
    let stdout = '';
    let stderr = '';
    let browsing: Promise<{ status: number } | undefined> | undefined;
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const url = /^ {2}(http:\/\/\S+)$/m.exec(stdout)?.[1];
      if (url !== undefined && browsing === undefined) browsing = browse(url).catch(() => undefined);
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      void Promise.resolve(browsing).then((answer) =>
        resolve({ code, stdout, stderr, browserStatus: answer?.status }),
      );
    });
    child.stdin.end();
  });
}

test(
  'toolbus mcp login, import and call against a server that requires OAuth; no token is ever printed',
  { timeout: 180_000 },
  async (t) => {
    const mcp = await startMcpOAuthServer();
    const as = await startAuthServer({ resources: { [mcp.url]: 'mcp:tools mcp:admin' } });
    mcp.trust(as);
    const home = mkdtempSync(join(tmpdir(), 'toolbus-oauth-cli-'));
    t.after(async () => {
      await as.close();
      await mcp.close();
      rmSync(home, { recursive: true, force: true });
    });
    const storePath = join(home, 'config.db');
    const env = { ...process.env, TOOLBUS_HOME: home, TOOLBUS_ALLOW_COMMANDS: '', TOOLBUS_ALLOW_ENV: '' };
    const runs: CliRun[] = [];
    const cli = async (...args: string[]): Promise<CliRun> => {
      const run = await runCli([...args, '--store', storePath], env);
      runs.push(run);
      return run;
    };

    const help = await runCli(['mcp', '--help'], env);
    assert.match(help.stdout, /toolbus mcp login <id> \[--no-browser\] \[--port N\] \[--timeout AGE\]/);
    assert.match(help.stdout, /^login {4}Authorize toolbus with the MCP server of mcp\/<id>/m);

    const put = await cli(
      'config',
      'put',
      'mcp/remote',
      JSON.stringify({ url: mcp.url, oauth: { scope: 'mcp:tools' } }),
    );
    assert.equal(put.code, 0, put.stderr);

    // Before any login, a call says what to do.
    const early = await cli('mcp', 'import', 'remote');
    assert.equal(early.code, 1);
    assert.match(early.stderr, /needs a person to authorize toolbus .*run 'toolbus mcp login remote'/);

    const login = await loginWithBrowser(
      ['mcp', 'login', 'remote', '--no-browser', '--store', storePath],
      env,
      (url) => as.browse(url),
    );
    runs.push(login);
    assert.equal(login.code, 0, login.stderr);
    assert.equal(login.browserStatus, 200, 'the loopback listener answered the browser');
    assert.match(login.stdout, /Open this URL in a browser to authorize toolbus with mcp\/remote:/);
    assert.match(
      login.stdout,
      /Logged in to mcp\/remote: scope mcp:tools; access token expires \d{4}-\d\d-\d\dT[\d:.]+Z; renewed with a refresh token\. 4 tools\. Kept in mcp-oauth\/remote\./,
    );

    const imported = await cli('mcp', 'import', 'remote');
    assert.equal(imported.code, 0, imported.stderr);
    assert.match(imported.stdout, /4 of 4 tools written/);

    const called = await cli('call', 'whoami');
    assert.equal(called.code, 0, called.stderr);
    assert.equal(JSON.parse(called.stdout).sub, 'alice');

    const shown = await cli('config', 'get', 'mcp-oauth/remote');
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(
      shown.stderr,
      /mcp-oauth\/remote holds secrets; withheld: .*tokens\.access_token, tokens\.refresh_token/,
    );
    assert.equal(JSON.parse(shown.stdout).tokens.access_token, '(withheld)');
    const listed = await cli('config', 'list', '--json');
    assert.equal(listed.code, 0, listed.stderr);
    const refused = await cli('config', 'put', 'mcp-oauth/remote', '{}', '--any-type', '--force');
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /holds secrets that only toolbus writes/);

    // The secrets that exist: none of them was printed by any command.
    const store = new SqliteConfigStore({ path: storePath });
    const state = (await store.get('mcp-oauth', 'remote'))?.value as {
      tokens: { access_token: string; refresh_token: string };
    };
    await store.close();
    const secrets = [state.tokens.access_token, state.tokens.refresh_token];
    assert.ok(secrets.every((s) => typeof s === 'string' && s.length > 10));
    for (const run of runs) {
      for (const secret of secrets) {
        assert.ok(!run.stdout.includes(secret) && !run.stderr.includes(secret), 'a token was printed');
      }
    }
    // Nor is the code the browser carried back.
    assert.ok(!/code=/.test(login.stdout + login.stderr));

    const logout = await cli('mcp', 'logout', 'remote');
    assert.equal(logout.code, 0, logout.stderr);
    assert.match(logout.stdout, /Logged out of mcp\/remote \(deleted mcp-oauth\/remote\)/);
    const after = await cli('call', 'whoami');
    assert.equal(after.code, 1);
    assert.match(after.stdout + after.stderr, /run 'toolbus mcp login remote'/);
  },
);

test(
  'toolbus mcp login: a bad port, a secret written into config, an oauth object that cannot work and an item without oauth are clear errors',
  { timeout: 60_000 },
  async (t) => {
    const home = mkdtempSync(join(tmpdir(), 'toolbus-oauth-cli-'));
    t.after(() => rmSync(home, { recursive: true, force: true }));
    const env = { ...process.env, TOOLBUS_HOME: home };
    const storePath = join(home, 'config.db');
    const badPort = await runCli(['mcp', 'login', 'x', '--port', 'http', '--store', storePath], env);
    assert.equal(badPort.code, 2);
    assert.match(badPort.stderr, /--port must be a number from 0 to 65535/);
    // A secret written into the item is refused before it is stored, with or without TOOLBUS_ALLOW_ENV.
    const leaky = {
      url: 'http://127.0.0.1:9/mcp',
      oauth: { 'client-id': 'c', 'client-secret': 'hunter2hunter2' },
    };
    const inline = await runCli(
      ['config', 'put', 'mcp/leaky', JSON.stringify(leaky), '--store', storePath],
      env,
    );
    assert.equal(inline.code, 1);
    assert.match(
      inline.stderr,
      /'oauth.client-secret' must be \{"env": "VARIABLE_NAME"\}: config never holds a secret/,
    );
    assert.match(inline.stderr, /Nothing was stored/);
    // What would fail once used fails when stored: a service without its client, a redirect that is no URL.
    const service = { url: 'http://127.0.0.1:9/mcp', oauth: { grant: 'client_credentials' } };
    const clientless = await runCli(
      ['config', 'put', 'mcp/svc', JSON.stringify(service), '--store', storePath],
      env,
    );
    assert.equal(clientless.code, 1);
    assert.match(clientless.stderr, /'oauth.client-id' is needed for grant 'client_credentials'/);
    assert.match(clientless.stderr, /Nothing was stored/);
    // Written before toolbus checked it: the login says what is wrong instead of failing on a TypeError.
    const written = new SqliteConfigStore({ path: storePath });
    await written.put('mcp', 'odd', { url: 'http://127.0.0.1:9/mcp', oauth: { 'redirect-url': 'foo' } });
    await written.close();
    const odd = await runCli(['mcp', 'login', 'odd', '--no-browser', '--store', storePath], env);
    assert.equal(odd.code, 1, odd.stderr);
    assert.match(odd.stderr, /config 'mcp\/odd': 'oauth.redirect-url' must be an absolute URL, got 'foo'/);
    await runCli(
      ['config', 'put', 'mcp/plain', '{"url":"http://127.0.0.1:9/mcp"}', '--store', storePath],
      env,
    );
    const plain = await runCli(['mcp', 'login', 'plain', '--store', storePath], env);
    assert.equal(plain.code, 1);
    assert.match(plain.stderr, /config 'mcp\/plain' has no 'oauth' object, so there is nothing to log in to/);
  },
);
