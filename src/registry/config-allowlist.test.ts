import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolbusError } from '../errors/index.js';
import type { JsonValue } from '../schema/index.js';
import {
  ALLOW_COMMANDS_VARIABLE,
  ALLOW_ENV_VARIABLE,
  assertConfigAllowed,
  configAllowlistFromEnv,
  configPrivileges,
} from './index.js';
import type { ConfigAllowlist } from './index.js';

/** The `not-allowed` error `assertConfigAllowed` throws, or undefined when it allows the item. */
function refusal(
  allowlist: ConfigAllowlist,
  type: string,
  key: string,
  value: JsonValue | undefined,
): ToolbusError | undefined {
  try {
    assertConfigAllowed(allowlist, type, key, value);
    return undefined;
  } catch (error) {
    assert.ok(error instanceof ToolbusError, `expected a ToolbusError, got ${String(error)}`);
    assert.equal(error.code, 'not-allowed');
    return error;
  }
}

const stdio = (command: string, args?: JsonValue[]): JsonValue =>
  args === undefined ? { command } : { command, args };
const httpTool = (env: string): JsonValue => ({
  type: 'http',
  name: 'weather',
  url: 'https://api.example.com/weather',
  headers: { 'X-Static': 'fixed', Authorization: { env, prefix: 'Bearer ' } },
});

describe('configAllowlistFromEnv', () => {
  test('reads both variables; commas and newlines separate entries, blanks are dropped', () => {
    const allowlist = configAllowlistFromEnv({
      [ALLOW_COMMANDS_VARIABLE]: ' npx -y @scope/server ,\nnode\n\n, ,uvx',
      [ALLOW_ENV_VARIABLE]: 'WEATHER_TOKEN,\nGITHUB_*,',
    });
    assert.deepEqual(allowlist, {
      commands: ['npx -y @scope/server', 'node', 'uvx'],
      env: ['WEATHER_TOKEN', 'GITHUB_*'],
    });
  });

  test('unset or empty variables allow nothing', () => {
    assert.deepEqual(configAllowlistFromEnv({}), { commands: [], env: [] });
    const empty = configAllowlistFromEnv({ [ALLOW_COMMANDS_VARIABLE]: '', [ALLOW_ENV_VARIABLE]: ' , ' });
    assert.deepEqual(empty, { commands: [], env: [] });
    assert.ok(refusal(empty, 'mcp', 'x', stdio('npx')));
    assert.ok(refusal(empty, 'tool', 'x', httpTool('TOKEN')));
  });
});

describe('configPrivileges', () => {
  test("an mcp item's command with its args, and every { env } header value", () => {
    assert.deepEqual(configPrivileges('mcp', stdio('npx', ['-y', 'pkg'])), {
      commands: [{ command: 'npx', args: ['-y', 'pkg'], env: [], cwd: undefined }],
      env: [],
    });
    assert.deepEqual(configPrivileges('tool', httpTool('TOKEN')), { commands: [], env: ['TOKEN'] });
  });

  test('a non-string argument keeps its place, so the arguments after it do not move up', () => {
    assert.deepEqual(configPrivileges('mcp', stdio('npx', [1, '-y', 'pkg'])).commands, [
      { command: 'npx', args: ['1', '-y', 'pkg'], env: [], cwd: undefined },
    ]);
  });

  test('items that neither run a program nor read a variable ask for nothing', () => {
    const none = { commands: [], env: [] };
    assert.deepEqual(configPrivileges('mcp', { url: 'http://127.0.0.1:8000/mcp' }), none);
    // `command` means a program only in an mcp item; a static header is not a variable.
    assert.deepEqual(configPrivileges('tool', { type: 'x', command: 'sh', headers: { A: 'b' } }), none);
    assert.deepEqual(configPrivileges('tool-service', { id: 'joke-service' }), none);
    for (const value of [undefined, null, 'sh', 42, ['sh']])
      assert.deepEqual(configPrivileges('mcp', value), none);
  });
});

describe('assertConfigAllowed: programs', () => {
  test('a program listed exactly is allowed with any arguments; another one is not', () => {
    const allowlist = { commands: ['npx', '/opt/mcp/weather'] };
    assert.equal(refusal(allowlist, 'mcp', 'a', stdio('npx', ['-y', 'anything'])), undefined);
    assert.equal(refusal(allowlist, 'mcp', 'b', stdio('/opt/mcp/weather')), undefined);
    assert.ok(refusal(allowlist, 'mcp', 'c', stdio('sh', ['-c', 'echo hi'])));
    // The name is compared as written: a path to the same program, or a prefix of it, is another entry.
    assert.ok(refusal(allowlist, 'mcp', 'd', stdio('/usr/bin/npx')));
    assert.ok(refusal(allowlist, 'mcp', 'e', stdio('np')));
    assert.ok(refusal(allowlist, 'mcp', 'f', stdio('weather')));
  });

  test('an entry with arguments allows only calls whose arguments start with them', () => {
    const allowlist = { commands: ['npx -y @modelcontextprotocol/server-everything'] };
    const everything = ['-y', '@modelcontextprotocol/server-everything'];
    assert.equal(refusal(allowlist, 'mcp', 'a', stdio('npx', everything)), undefined);
    assert.equal(refusal(allowlist, 'mcp', 'b', stdio('npx', [...everything, '--port', '1'])), undefined);
    assert.ok(refusal(allowlist, 'mcp', 'c', stdio('npx', ['-y', 'evil-package'])));
    assert.ok(refusal(allowlist, 'mcp', 'd', stdio('npx', ['-y'])));
    assert.ok(refusal(allowlist, 'mcp', 'e', stdio('npx')));
    assert.ok(refusal(allowlist, 'mcp', 'f', stdio('npx', [1, ...everything])));
  });

  test('a double-quoted word may contain spaces (a program under C:\\Program Files)', () => {
    const node = 'C:\\Program Files\\nodejs\\node.exe';
    const allowlist = { commands: [`"${node}" server.js`] };
    assert.equal(refusal(allowlist, 'mcp', 'a', stdio(node, ['server.js'])), undefined);
    assert.ok(refusal(allowlist, 'mcp', 'b', stdio(node, ['other.js'])));
    assert.ok(refusal(allowlist, 'mcp', 'c', stdio('C:\\Program')));
    // Unquoted, the entry is the program 'C:\Program' with arguments.
    assert.ok(refusal({ commands: [node] }, 'mcp', 'd', stdio(node)));
  });

  test('* allows every program', () => {
    assert.equal(refusal({ commands: ['*'] }, 'mcp', 'a', stdio('sh', ['-c', 'anything'])), undefined);
    assert.equal(refusal({ commands: ['*'] }, 'mcp', 'b', stdio('/any/path')), undefined);
  });

  test('the message names the item, the program and the setting, with the entry to add', () => {
    const error = refusal({}, 'mcp', 'x', stdio('sh', ['-c', 'echo hi']));
    assert.ok(error);
    assert.match(error.message, /^config 'mcp\/x' runs the program 'sh', which is not allowed/);
    assert.match(error.message, /only programs listed in TOOLBUS_ALLOW_COMMANDS/);
    assert.match(error.message, /set TOOLBUS_ALLOW_COMMANDS=sh in the environment of 'toolbus up'/);
    // The arguments (which may hold secrets) are not repeated.
    assert.doesNotMatch(error.message, /echo hi/);
    const spaced = refusal({}, 'mcp', 'y', stdio('C:\\Program Files\\x.exe'));
    assert.match(spaced?.message ?? '', /TOOLBUS_ALLOW_COMMANDS='"C:\\Program Files\\x\.exe"'/);
  });

  test('a long or multi-line program name is shortened and escaped in the message', () => {
    const error = refusal({}, 'mcp', 'x', stdio(`evil\n${'a'.repeat(1000)}`));
    assert.ok(error);
    assert.match(error.message, /'evil\\u000aaaa/);
    assert.ok(error.message.length < 700, `message of ${error.message.length} characters`);
  });
});

describe('assertConfigAllowed: environment variables', () => {
  test('an exact name allows that variable only', () => {
    const allowlist = { env: ['WEATHER_TOKEN'] };
    assert.equal(refusal(allowlist, 'tool', 'weather', httpTool('WEATHER_TOKEN')), undefined);
    assert.ok(refusal(allowlist, 'tool', 'weather', httpTool('WEATHER_TOKEN_2')));
    assert.ok(refusal(allowlist, 'tool', 'weather', httpTool('AWS_SECRET_ACCESS_KEY')));
  });

  test('* in a pattern stands for any run of characters; other characters are literal', () => {
    const allowlist = { env: ['WEATHER_*', '*_PUBLIC', 'A.B'] };
    assert.equal(refusal(allowlist, 'tool', 'a', httpTool('WEATHER_TOKEN')), undefined);
    assert.equal(refusal(allowlist, 'tool', 'b', httpTool('WEATHER_')), undefined);
    assert.equal(refusal(allowlist, 'tool', 'c', httpTool('KEY_PUBLIC')), undefined);
    assert.equal(refusal(allowlist, 'tool', 'd', httpTool('A.B')), undefined);
    assert.ok(refusal(allowlist, 'tool', 'e', httpTool('MY_WEATHER_TOKEN')));
    assert.ok(refusal(allowlist, 'tool', 'f', httpTool('KEY_PUBLIC_NOT')));
    assert.ok(refusal(allowlist, 'tool', 'g', httpTool('AxB')), "'.' is not a regex wildcard");
    assert.equal(refusal({ env: ['*'] }, 'tool', 'h', httpTool('ANYTHING')), undefined);
  });

  test('every env header must be allowed, not just one of them', () => {
    const value = {
      type: 'http',
      name: 'two',
      url: 'https://api.example.com/',
      headers: { A: { env: 'WEATHER_TOKEN' }, B: { env: 'SECRET' } },
    };
    const error = refusal({ env: ['WEATHER_TOKEN'] }, 'tool', 'two', value);
    assert.match(error?.message ?? '', /'SECRET'/);
  });

  test('the message names the item, the variable and the setting', () => {
    const error = refusal({}, 'tool', 'weather', httpTool('SECRET'));
    assert.ok(error);
    assert.match(
      error.message,
      /^config 'tool\/weather' reads the environment variable 'SECRET', which is not allowed/,
    );
    assert.match(error.message, /only variables listed in TOOLBUS_ALLOW_ENV/);
    assert.match(error.message, /set TOOLBUS_ALLOW_ENV=SECRET in the environment of 'toolbus up'/);
  });
});

describe('assertConfigAllowed: items without privileges', () => {
  test('pass under the empty allowlist', () => {
    const items: [string, JsonValue | undefined][] = [
      ['mcp', { url: 'http://127.0.0.1:8000/mcp', headers: { Authorization: 'Bearer x' } }],
      ['tool', { type: 'http', name: 'h', url: 'https://x.example/', headers: { A: 'static' } }],
      ['tool', { type: 'mcp-tool', 'mcp-tool': 'files' }],
      ['tool-service', { id: 'joke-service', 'request-queue': 'q' }],
      ['prompt', { template: 'Hi {{name}}' }],
      ['mcp', undefined],
      ['tool', null],
    ];
    for (const [type, value] of items) {
      assert.equal(refusal({}, type, 'k', value), undefined, `${type} ${JSON.stringify(value)}`);
    }
  });
});

describe('assertConfigAllowed: the environment and folder of an allowed program', () => {
  const node = (extra: Record<string, unknown>) => ({ command: 'node', args: ['/srv/mcp.js'], ...extra });

  test('a variable set for the program must be listed in TOOLBUS_ALLOW_ENV: NODE_OPTIONS would run other code', () => {
    const item = node({ env: { NODE_OPTIONS: '--import=data:text/javascript,evil()' } });
    assert.throws(() => assertConfigAllowed({ commands: ['node'] }, 'mcp', 'm', item), {
      code: 'not-allowed',
      message:
        /sets the environment variable 'NODE_OPTIONS' for the program 'node'.*TOOLBUS_ALLOW_ENV=NODE_OPTIONS/,
    });
    const token = node({ env: { GITHUB_TOKEN: 'ghp_x' } });
    assert.doesNotThrow(() =>
      assertConfigAllowed({ commands: ['node'], env: ['GITHUB_*'] }, 'mcp', 'm', token),
    );
    assert.throws(() => assertConfigAllowed({ commands: ['node'], env: ['GITHUB_*'] }, 'mcp', 'm', item), {
      code: 'not-allowed',
    });
  });

  test("'cwd' needs the whole trust of '*': the folder changes what an allowed program runs", () => {
    const item = node({ cwd: '/tmp/planted' });
    assert.throws(() => assertConfigAllowed({ commands: ['node'] }, 'mcp', 'm', item), {
      code: 'not-allowed',
      message: /sets 'cwd' for the program 'node'.*absolute paths.*TOOLBUS_ALLOW_COMMANDS=\*/,
    });
    assert.doesNotThrow(() => assertConfigAllowed({ commands: ['*'] }, 'mcp', 'm', item));
    assert.doesNotThrow(() =>
      assertConfigAllowed({ commands: ['*'] }, 'mcp', 'm', node({ env: { NODE_OPTIONS: 'x' } })),
    );
  });
});

describe('assertConfigAllowed: the OAuth secrets of an mcp item', () => {
  const remote = {
    url: 'https://mcp.example.com/mcp',
    oauth: { grant: 'client_credentials', 'client-id': 'svc', 'client-secret': { env: 'MCP_SECRET' } },
  };

  test('oauth client-secret and private-key given as { env } are variables the item reads', () => {
    const withKey = {
      url: 'https://x.example/mcp',
      oauth: { 'client-id': 'k', 'private-key': { env: 'MCP_KEY' } },
    };
    assert.deepEqual(configPrivileges('mcp', remote).env, ['MCP_SECRET']);
    assert.deepEqual(configPrivileges('mcp', withKey).env, ['MCP_KEY']);
    // Only an mcp item's oauth means that.
    assert.deepEqual(configPrivileges('tool', remote).env, []);
  });

  test('refused unless TOOLBUS_ALLOW_ENV lists the variable, with the same message as a header', () => {
    const error = refusal({}, 'mcp', 'remote', remote);
    assert.match(
      error?.message ?? '',
      /config 'mcp\/remote' reads the environment variable 'MCP_SECRET'.*TOOLBUS_ALLOW_ENV=MCP_SECRET/,
    );
    assert.equal(refusal({ env: ['MCP_*'] }, 'mcp', 'remote', remote), undefined);
  });
});
