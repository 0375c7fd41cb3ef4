import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { ToolbusError } from '../errors/index.js';
import type { JsonValue } from '../schema/index.js';
import {
  checkPrincipalName,
  decodePrincipalItem,
  decodeQuotaItem,
  decodeRoleItem,
  hashToken,
  isRole,
  newPrincipalToken,
  Role,
  splitList,
} from './principal.js';

const HASH = hashToken('tbk_test-token');

function assertInvalid(fn: () => unknown, code: string, ...fragments: string[]): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof ToolbusError, `a ToolbusError, got ${String(error)}`);
    assert.equal(error.code, code);
    for (const fragment of fragments) {
      assert.ok(error.message.includes(fragment), `${error.message} ∌ ${fragment}`);
    }
    return true;
  });
}

describe('tokens', () => {
  test('newPrincipalToken is tbk_ and 43 base64url characters, different every time', () => {
    const a = newPrincipalToken();
    const b = newPrincipalToken();
    assert.match(a, /^tbk_[A-Za-z0-9_-]{43}$/);
    assert.match(b, /^tbk_[A-Za-z0-9_-]{43}$/);
    assert.notEqual(a, b);
    assert.equal(Buffer.from(a.slice(4), 'base64url').length, 32);
  });

  test('hashToken is sha256: and the base64url digest, stable per token', () => {
    const token = newPrincipalToken();
    const hash = hashToken(token);
    assert.match(hash, /^sha256:[A-Za-z0-9_-]{43}$/);
    assert.equal(hashToken(token), hash);
    assert.notEqual(hashToken(token + 'x'), hash);
    assert.equal(hash, `sha256:${createHash('sha256').update(token).digest('base64url')}`);
    // A known vector: SHA-256 of the empty string.
    assert.equal(hashToken(''), 'sha256:47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU');
  });
});

describe('roles and lists', () => {
  test('isRole knows the four roles only', () => {
    for (const role of Object.values(Role)) assert.equal(isRole(role), true);
    assert.deepEqual(Object.values(Role).sort(), ['admin', 'approver', 'caller', 'impersonate']);
    assert.equal(isRole('root'), false);
    assert.equal(isRole('Caller'), false);
  });

  test('splitList trims and drops empty parts', () => {
    assert.deepEqual(splitList(' a, b,c ,, '), ['a', 'b', 'c']);
    assert.deepEqual(splitList(''), []);
  });
});

describe('checkPrincipalName', () => {
  test('accepts names of letters, digits, . _ - up to 64 characters', () => {
    assert.equal(checkPrincipalName('ci-bot'), 'ci-bot');
    assert.equal(checkPrincipalName('a'), 'a');
    assert.equal(checkPrincipalName('Bot_2.prod-x'), 'Bot_2.prod-x');
    assert.equal(checkPrincipalName('a'.repeat(64)), 'a'.repeat(64));
  });

  test("refuses 'admin' saying it is the default token's", () => {
    assertInvalid(
      () => checkPrincipalName('admin'),
      'invalid-name',
      "'admin' is the default token's principal",
    );
  });

  test('refuses empty, spaces, 65 characters and a leading dot', () => {
    for (const bad of ['', 'ci bot', ' ci', 'a'.repeat(65), '.hidden', '-x', 'jwt:bob', 'ünï']) {
      assertInvalid(() => checkPrincipalName(bad), 'invalid-name', 'must be 1–64 letters, digits');
    }
  });
});

describe('decodePrincipalItem', () => {
  test('a valid item: roles, hash, user defaulting to the name, via key', () => {
    const stored = decodePrincipalItem('ci-bot', { roles: ['caller'], tokenHash: HASH });
    assert.equal(stored.tokenHash, HASH);
    assert.deepEqual(stored.principal, {
      name: 'ci-bot',
      roles: ['caller'],
      user: 'ci-bot',
      tools: undefined,
      rate: undefined,
      maxInFlight: undefined,
      via: 'key',
    });
  });

  test('every field: user, tools, rate with burst, maxInFlight', () => {
    const { principal } = decodePrincipalItem('ci-bot', {
      roles: ['caller', 'impersonate'],
      tokenHash: HASH,
      user: 'alice',
      tools: ['tell-*', 'get-weather'],
      rate: '20/s',
      burst: 40,
      maxInFlight: 4,
      created: '2024-01-01T00:00:00Z',
    });
    assert.deepEqual(principal.roles, ['caller', 'impersonate']);
    assert.equal(principal.user, 'alice');
    assert.deepEqual(principal.tools, ['tell-*', 'get-weather']);
    assert.deepEqual(principal.rate, { tokens: 20, periodMs: 1_000, burst: 40, text: '20/s' });
    assert.equal(principal.maxInFlight, 4);
  });

  test('roles and tools may be one comma-separated string', () => {
    const { principal } = decodePrincipalItem('x', {
      roles: 'caller, approver',
      tokenHash: HASH,
      tools: 'tell-*, get-weather',
    });
    assert.deepEqual(principal.roles, ['caller', 'approver']);
    assert.deepEqual(principal.tools, ['tell-*', 'get-weather']);
  });

  test('list entries are trimmed', () => {
    const { principal } = decodePrincipalItem('x', { roles: [' caller '], tokenHash: HASH, tools: [' a* '] });
    assert.deepEqual(principal.roles, ['caller']);
    assert.deepEqual(principal.tools, ['a*']);
  });

  test('not an object', () => {
    for (const bad of [null, undefined, 'caller', 3, ['caller']] as (JsonValue | undefined)[]) {
      assertInvalid(
        () => decodePrincipalItem('x', bad),
        'invalid-config',
        'principal/x',
        'expected a JSON object',
      );
    }
  });

  test('missing or malformed tokenHash', () => {
    const bads: JsonValue[] = [
      { roles: ['caller'] },
      { roles: ['caller'], tokenHash: 'tbk_plaintext-token' },
      { roles: ['caller'], tokenHash: 'sha256:short' },
      { roles: ['caller'], tokenHash: `md5:${HASH.slice(7)}` },
      { roles: ['caller'], tokenHash: `${HASH}=` },
      { roles: ['caller'], tokenHash: 42 },
    ];
    for (const bad of bads) {
      assertInvalid(
        () => decodePrincipalItem('x', bad),
        'invalid-config',
        'principal/x',
        "'tokenHash' must be 'sha256:'",
      );
    }
  });

  test('an unknown role names the allowed roles and the bad one', () => {
    assertInvalid(
      () => decodePrincipalItem('x', { roles: ['caller', 'root'], tokenHash: HASH }),
      'invalid-config',
      'principal/x',
      'admin, caller, approver, impersonate',
      "got 'root'",
    );
  });

  test('no roles at all is refused', () => {
    for (const roles of [undefined, [], '', ' , ']) {
      const value: { [key: string]: JsonValue } = { tokenHash: HASH };
      if (roles !== undefined) value['roles'] = roles;
      assertInvalid(
        () => decodePrincipalItem('x', value),
        'invalid-config',
        "'roles' must list one or more of",
      );
    }
  });

  test('roles or tools of the wrong type', () => {
    assertInvalid(
      () => decodePrincipalItem('x', { roles: [1], tokenHash: HASH }),
      'invalid-config',
      "'roles' must be a list of non-empty strings",
    );
    assertInvalid(
      () => decodePrincipalItem('x', { roles: ['caller'], tokenHash: HASH, tools: { a: 1 } }),
      'invalid-config',
      "'tools' must be a list of non-empty strings",
    );
    assertInvalid(
      () => decodePrincipalItem('x', { roles: ['caller'], tokenHash: HASH, tools: ['ok', ' '] }),
      'invalid-config',
      "'tools' must be a list",
    );
  });

  test('user must be a non-empty string', () => {
    for (const user of ['', 5, null]) {
      assertInvalid(
        () => decodePrincipalItem('x', { roles: ['caller'], tokenHash: HASH, user }),
        'invalid-config',
        "'user' must be a non-empty string",
      );
    }
  });

  test('a bad rate or burst names the item', () => {
    assertInvalid(
      () => decodePrincipalItem('x', { roles: ['caller'], tokenHash: HASH, rate: 20 }),
      'invalid-config',
      'principal/x',
      "'rate' must be a string such as '20/s'",
    );
    assertInvalid(
      () => decodePrincipalItem('x', { roles: ['caller'], tokenHash: HASH, rate: 'fast' }),
      'invalid-config',
      'principal/x: ',
      "rate 'fast' is not a rate",
    );
    assertInvalid(
      () => decodePrincipalItem('x', { roles: ['caller'], tokenHash: HASH, rate: '5/s', burst: '10' }),
      'invalid-config',
      "'burst' must be a number",
    );
    assertInvalid(
      () => decodePrincipalItem('x', { roles: ['caller'], tokenHash: HASH, rate: '5/s', burst: 0 }),
      'invalid-config',
      'burst must be a number ≥ 1',
    );
  });

  test('maxInFlight must be a whole number ≥ 1', () => {
    for (const maxInFlight of [0, -1, 1.5, '2', null]) {
      assertInvalid(
        () => decodePrincipalItem('x', { roles: ['caller'], tokenHash: HASH, maxInFlight }),
        'invalid-config',
        "'maxInFlight' must be a whole number ≥ 1",
      );
    }
    assert.equal(
      decodePrincipalItem('x', { roles: ['caller'], tokenHash: HASH, maxInFlight: 1 }).principal.maxInFlight,
      1,
    );
  });

  test("an item named 'admin' is refused: it would pass for the owner's token", () => {
    assertInvalid(
      () => decodePrincipalItem('admin', { roles: ['caller'], tokenHash: HASH }),
      'invalid-config',
      'principal/admin',
      "'admin' is the default token's principal",
    );
  });
});

describe('decodeRoleItem', () => {
  test('tools, rate and maxInFlight, all optional', () => {
    assert.deepEqual(decodeRoleItem('caller', {}), {
      tools: undefined,
      rate: undefined,
      maxInFlight: undefined,
    });
    const settings = decodeRoleItem('caller', { tools: 'tell-*, get-*', rate: '10/m', maxInFlight: 8 });
    assert.deepEqual(settings.tools, ['tell-*', 'get-*']);
    assert.equal(settings.rate?.text, '10/m');
    assert.equal(settings.rate?.periodMs, 60_000);
    assert.equal(settings.maxInFlight, 8);
    assert.deepEqual(decodeRoleItem('caller', { tools: [] }).tools, []);
  });

  test('bad items name role/NAME', () => {
    assertInvalid(
      () => decodeRoleItem('caller', 'tell-*'),
      'invalid-config',
      'role/caller',
      'expected a JSON object',
    );
    assertInvalid(() => decodeRoleItem('caller', { tools: 3 }), 'invalid-config', 'role/caller', "'tools'");
    assertInvalid(
      () => decodeRoleItem('caller', { rate: '1/w' }),
      'invalid-config',
      'role/caller',
      "rate '1/w'",
    );
    assertInvalid(
      () => decodeRoleItem('caller', { maxInFlight: 0 }),
      'invalid-config',
      'role/caller',
      'maxInFlight',
    );
  });
});

describe('decodeQuotaItem', () => {
  test('rate with burst; per defaults to principal', () => {
    const quota = decodeQuotaItem('tell-joke', { rate: '5/s', burst: 10 });
    assert.deepEqual(quota, {
      rate: { tokens: 5, periodMs: 1_000, burst: 10, text: '5/s' },
      per: 'principal',
    });
    assert.equal(decodeQuotaItem('tell-joke', { rate: '5/s', per: 'all' }).per, 'all');
    assert.equal(decodeQuotaItem('tell-joke', { rate: '5/s', per: 'principal' }).per, 'principal');
  });

  test('rate is required', () => {
    assertInvalid(
      () => decodeQuotaItem('tell-joke', {}),
      'invalid-config',
      'quota/tell-joke',
      "'rate' is required",
    );
    assertInvalid(
      () => decodeQuotaItem('tell-joke', { burst: 3 }),
      'invalid-config',
      'quota/tell-joke',
      "'rate' is required",
    );
  });

  test("per is 'principal' or 'all'", () => {
    assertInvalid(
      () => decodeQuotaItem('tell-joke', { rate: '5/s', per: 'user' }),
      'invalid-config',
      "'per' must be 'principal' or 'all'",
    );
  });

  test('not an object, or a bad rate', () => {
    assertInvalid(
      () => decodeQuotaItem('tell-joke', '5/s'),
      'invalid-config',
      'quota/tell-joke',
      'expected a JSON object',
    );
    assertInvalid(
      () => decodeQuotaItem('tell-joke', { rate: '0/s' }),
      'invalid-config',
      'quota/tell-joke',
      "rate '0/s'",
    );
  });
});
